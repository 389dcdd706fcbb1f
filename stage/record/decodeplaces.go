package record

import (
	"strings"

	"github.com/git-flume/git-flume/refs"
)

// DecodePlaces are the place records among records that decode.
func DecodePlaces(records []*refs.Record) []*Place {
	var out []*Place
	for _, rec := range records {
		if strings.HasPrefix(rec.Ref, PlacePrefix) {
			if p, err := DecodePlace(rec); err == nil {
				out = append(out, p)
			}
		}
	}
	return out
}
