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

// DecodeEach decodes each of records as a place: nil, and its error in
// errs, where one does not decode.
func DecodeEach(records []*refs.Record) (places []*Place, errs []error) {
	places = make([]*Place, len(records))
	for i, rec := range records {
		p, err := DecodePlace(rec)
		if err != nil {
			errs = append(errs, err)
		}
		places[i] = p
	}
	return places, errs
}
