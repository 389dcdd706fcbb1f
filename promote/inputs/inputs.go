package inputs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/promote/request"
)

// ContentID names a file's exact bytes.
func ContentID(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Copy reads every input once and keeps a private read-only copy of
// those very bytes in dir (P2); the ids recorded are the copies'.
func Copy(dir string, inputs map[string]string) (map[string]request.Input, error) {
	if len(inputs) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	out := map[string]request.Input{}
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		src := inputs[name]
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", name, err)
		}
		if len(data) > request.MaxInputSize {
			return nil, request.Invalid("tasks[0].inputs."+name, "%s is %d bytes; at most %d", src, len(data), request.MaxInputSize)
		}
		cp := filepath.Join(dir, name)
		_ = os.Chmod(cp, 0o600) // a copy left by an interrupted start is replaced; if it cannot be, WriteFile says so
		if err := os.WriteFile(cp, data, 0o400); err != nil {
			return nil, fmt.Errorf("copy input %s: %w", name, err)
		}
		if err := os.Chmod(cp, 0o400); err != nil {
			return nil, err
		}
		out[name] = request.Input{Source: src, Copy: cp, ID: ContentID(data)}
	}
	return out, nil
}

// ChangedError says an input's source or copy no longer holds the bytes
// recorded: validation and promotion are blocked until a person looks.
type ChangedError struct {
	Name   string // the input's name
	Reason string
}

func (e *ChangedError) Error() string { return "input " + e.Name + ": " + e.Reason }

// Verify checks that every input's source and copy still have the content
// id recorded (P2); the first that does not is a *ChangedError.
func Verify(inputs map[string]request.Input) error {
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		in := inputs[name]
		for _, f := range []struct{ which, path string }{{"source", in.Source}, {"copy", in.Copy}} {
			data, err := os.ReadFile(f.path)
			if err != nil {
				return &ChangedError{Name: name, Reason: fmt.Sprintf("its %s %s cannot be read: %v", f.which, f.path, err)}
			}
			if got := ContentID(data); got != in.ID {
				return &ChangedError{Name: name, Reason: fmt.Sprintf("its %s %s changed (%s, recorded %s); inspect it by hand", f.which, f.path, got, in.ID)}
			}
		}
	}
	return nil
}

// TestScript returns the root package.json's scripts.test, or nil.
func TestScript(data []byte) *string {
	var pkg struct {
		Scripts map[string]json.RawMessage `json:"scripts"`
	}
	if json.Unmarshal(data, &pkg) != nil {
		return nil
	}
	raw, ok := pkg.Scripts["test"]
	if !ok {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	return &s
}

// PinScript reads the test script committed at the base (P4): dirty main
// files do not change it.
func PinScript(ctx context.Context, repo *git.Repo, base string) (*string, error) {
	data, err := repo.ReadFile(ctx, base, "package.json")
	if errors.Is(err, git.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return TestScript(data), nil
}
