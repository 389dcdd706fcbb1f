package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// What this clone remembers of the launch orders it wrote (M1), kept in
// .git/flume/orders/<place>, one "<order commit> <remote>" a line: a
// waiting order is taken up only if it is one of them, and one whose
// place has not been heard of is named by status until its place comes,
// or tidy finds it gone from the remote (its runner took it up, or a
// person withdrew it).

// ordersFile is where the launch orders this clone wrote for place id are
// kept.
func ordersFile(commonDir, id string) string {
	return filepath.Join(commonDir, "flume", "orders", id)
}

// written is one launch order this clone wrote: its commit and the
// remote it was pushed to.
type written struct{ order, remote string }

// ordersWritten are the launch orders this clone wrote for place id,
// oldest first.
func ordersWritten(commonDir, id string) []written {
	data, _ := os.ReadFile(ordersFile(commonDir, id))
	var ws []written
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) > 0 {
			ws = append(ws, written{order: f[0], remote: strings.Join(f[1:], " ")})
		}
	}
	return ws
}

// wroteOrder notes order as one this clone wrote for place id, before it
// is pushed to remote; the newest 16 are kept.
func wroteOrder(commonDir, id, order, remote string) error {
	ws := ordersWritten(commonDir, id)
	if len(ws) >= 16 {
		ws = ws[len(ws)-15:]
	}
	return keepOrders(commonDir, id, append(ws, written{order, remote}))
}

// forgetOrder forgets order of place id (one never pushed, or gone).
func forgetOrder(commonDir, id, order string) error {
	return keepOrders(commonDir, id, slices.DeleteFunc(ordersWritten(commonDir, id), func(w written) bool { return w.order == order }))
}

func keepOrders(commonDir, id string, ws []written) error {
	path := ordersFile(commonDir, id)
	if len(ws) == 0 {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "%s %s\n", w.order, w.remote)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return stage.ReplaceFile(path, []byte(b.String()), 0o644)
}

// Waiting is a launch order this clone wrote whose place has not been
// heard of: a runner that did not start, or has not taken it up yet.
type Waiting struct {
	Place, Runner, Remote, Order string
	At                           time.Time
}

// String says what waits and the two ways on.
func (w Waiting) String() string {
	return fmt.Sprintf("launch of %s on runner %s waits on %s since %s (order %.12s), its place not heard of: "+
		"the same launch again starts its runner; git push %s :%s%s withdraws it, and git flume tidy then forgets it",
		w.Place, w.Runner, w.Remote, w.At.UTC().Format("2006-01-02 15:04 UTC"), w.Order, w.Remote, OrderPrefix, w.Place)
}

// WaitingOrders are the launch orders this clone wrote (the newest of
// each place) whose place no record shows made by it, read from the
// order commits this clone wrote. A read.
func WaitingOrders(ctx context.Context, repo *git.Repo, read func(id string) *record.Place) []Waiting {
	entries, err := os.ReadDir(filepath.Join(repo.CommonDir, "flume", "orders"))
	if err != nil {
		return nil
	}
	var waiting []Waiting
	for _, e := range entries {
		ws := ordersWritten(repo.CommonDir, e.Name())
		if _, err := record.PlaceID(e.Name()); err != nil || len(ws) == 0 {
			continue
		}
		last := ws[len(ws)-1]
		objs, err := repo.FilesAt(ctx, []string{last.order}, "launch.json")
		var o Order
		if err != nil || len(objs) != 1 || json.Unmarshal(objs[0].Data, &o) != nil || o.check(e.Name()) != nil {
			continue
		}
		if p := read(o.Place); p != nil && orderMade(p, &o) {
			continue
		}
		waiting = append(waiting, Waiting{Place: o.Place, Runner: o.Runner, Remote: last.remote, Order: last.order, At: o.At})
	}
	return waiting
}

// orderMade reports whether p is the place order o made.
func orderMade(p *record.Place, o *Order) bool {
	return p.Runner == o.Runner && p.Brief == o.Brief
}

// refusedFile keeps the launch order for place id that waited on a remote
// and that no launch of this clone wrote: refused (M1), named by status
// and fsck until it is gone from the remote. One line: "<order> <remote>".
func refusedFile(commonDir, id string) string {
	return filepath.Join(commonDir, "flume", "orders-refused", id)
}

// refusedOrder notes order, refused for place id, as waiting on remote.
func refusedOrder(commonDir, id, order, remote string) error {
	path := refusedFile(commonDir, id)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return stage.ReplaceFile(path, []byte(order+" "+remote+"\n"), 0o644)
}

// Refused is a launch order on a remote that a launch here refused: no
// launch of this clone wrote it.
type Refused struct{ Place, Order, Remote string }

func (o Refused) String() string {
	return fmt.Sprintf("a launch order for %s waits on %s (%s%s at %.12s) that no launch of this clone wrote: refused, nothing made of it; "+
		"git push %s :%s%s removes it, and git flume tidy then forgets it", o.Place, o.Remote, OrderPrefix, o.Place, o.Order, o.Remote, OrderPrefix, o.Place)
}

// RefusedOrders are the launch orders a launch here refused that were on
// their remote when last looked at. A read.
func RefusedOrders(commonDir string) []Refused {
	entries, _ := os.ReadDir(filepath.Join(commonDir, "flume", "orders-refused"))
	var out []Refused
	for _, e := range entries {
		data, _ := os.ReadFile(refusedFile(commonDir, e.Name()))
		f := strings.Fields(string(data))
		if _, err := record.PlaceID(e.Name()); err == nil && len(f) >= 2 {
			out = append(out, Refused{Place: e.Name(), Order: f[0], Remote: strings.Join(f[1:], " ")})
		}
	}
	return out
}

// settleOrders forgets each order of WaitingOrders' whose place has been
// heard of since, or that is gone from its remote (its runner took it up,
// or a person withdrew it), saying so on out; a dry run only says.
func settleOrders(ctx context.Context, r *stage.Repository, out io.Writer, dryRun bool) error {
	entries, err := os.ReadDir(filepath.Join(r.Git.CommonDir, "flume", "orders"))
	if err != nil {
		return nil
	}
	read := func(id string) *record.Place {
		_, p, err := record.ReadPlace(ctx, r.Store, id)
		if err != nil {
			return nil
		}
		return p
	}
	waits := WaitingOrders(ctx, r.Git, read)
	for _, e := range entries {
		if !slices.ContainsFunc(waits, func(w Waiting) bool { return w.Place == e.Name() }) && !dryRun {
			_ = os.Remove(ordersFile(r.Git.CommonDir, e.Name())) // its place came
		}
	}
	for _, o := range RefusedOrders(r.Git.CommonDir) {
		there, err := r.Git.ListRemote(ctx, o.Remote, OrderPrefix+o.Place)
		if err != nil {
			return fmt.Errorf("launch order of %s on %s: %w", o.Place, o.Remote, err)
		}
		if there[OrderPrefix+o.Place] == o.Order {
			continue
		}
		verb := "forgotten"
		if dryRun {
			verb = "would forget"
		} else if err := os.Remove(refusedFile(r.Git.CommonDir, o.Place)); err != nil && !os.IsNotExist(err) {
			return err
		}
		fmt.Fprintf(out, "refused launch order of %s: gone from %s, %s\n", o.Place, o.Remote, verb)
	}
	for _, w := range waits {
		there, err := r.Git.ListRemote(ctx, w.Remote, OrderPrefix+w.Place)
		if err != nil {
			return fmt.Errorf("launch order of %s on %s: %w", w.Place, w.Remote, err)
		}
		if _, ok := there[OrderPrefix+w.Place]; ok {
			continue
		}
		verb := "forgotten"
		if dryRun {
			verb = "would forget"
		} else if err := forgetOrder(r.Git.CommonDir, w.Place, w.Order); err != nil {
			return err
		}
		fmt.Fprintf(out, "launch order of %s: gone from %s, %s\n", w.Place, w.Remote, verb)
	}
	return nil
}
