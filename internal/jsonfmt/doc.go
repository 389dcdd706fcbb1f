// Package jsonfmt lays out JSON for people: Indent gives compact JSON, as
// encoding/json's Marshal writes it, the layout json.Indent gives it, in
// one pass that only tracks strings. `--json` output of many places is
// hundreds of kilobytes, and json.Indent's validating scanner cost status
// more than marshalling did.
package jsonfmt
