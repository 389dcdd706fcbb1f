package request

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/git-flume/git-flume/refs"
)

// ReservationPrefix holds a repository's reservations for direct work, one
// ref per host: a checkout is a host's own, and a reservation fetched from
// another host is never acted on.
const ReservationPrefix = refs.Prefix + "reservations/"

// ReservationRef is host's reservation of a repository.
func ReservationRef(host string) string { return ReservationPrefix + host }

// Reservation is a checkout reserved by a direct request (kind
// "reservation", schema 1). The workspace's own reservation is a file of
// the same JSON in the workspace's .flume folder.
type Reservation struct {
	Schema  int       `json:"schema"`
	Kind    string    `json:"kind"`
	Request string    `json:"request"`
	Root    string    `json:"root"`
	Host    string    `json:"host"`
	At      time.Time `json:"at"`
}

// ReservationKind is a checkout reserved by direct work; WorkspaceKind a
// member's promotion record: the workspace's record kinds.
var (
	ReservationKind = refs.Kind{Name: "reservation", Schema: 1, Validate: validateReservation}
	WorkspaceKind   = refs.Kind{Name: "workspace", Schema: 1}
)

// validateReservation checks a reservation before anyone acts on it: its
// ref names its host, its request id and root read as such.
func validateReservation(ref string, data []byte) (any, error) {
	var r Reservation
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	if err := refs.ValidateHost(r.Host); err != nil {
		return nil, fmt.Errorf("invalid reservation: %w", err)
	}
	if ref != ReservationRef(r.Host) {
		return nil, fmt.Errorf("invalid reservation: %s holds host %q's", ref, r.Host)
	}
	if err := refs.ValidateName("request id", r.Request); err != nil {
		return nil, fmt.Errorf("invalid reservation: %w", err)
	}
	if !filepath.IsAbs(r.Root) || filepath.Clean(r.Root) != r.Root {
		return nil, fmt.Errorf("invalid reservation: root %q is not a clean absolute path", r.Root)
	}
	return &r, nil
}
