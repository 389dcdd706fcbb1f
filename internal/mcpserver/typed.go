package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Typed is a tool whose arguments decode into In (checked against its
// parameters first) and whose work prints to out: the result's text is
// what it printed, and on failure what failed prints for the error after
// what it printed to errOut.
func Typed[In any](name, description string, params []Param, work func(ctx context.Context, in In, out, errOut io.Writer) error, failed func(io.Writer, error)) Tool {
	fields := map[string]bool{}
	for f := range reflect.TypeFor[In]().Fields() {
		fields[strings.Split(f.Tag.Get("json"), ",")[0]] = true
	}
	for _, p := range params {
		if !fields[p.Name] {
			// A parameter the decoding would drop: a programming error,
			// met by every test that starts the server.
			panic(fmt.Sprintf("mcp tool %s: parameter %q is no field of %T", name, p.Name, *new(In)))
		}
	}
	return Tool{Name: name, Description: description, Params: params,
		Call: func(ctx context.Context, args json.RawMessage) (string, bool) {
			var in In
			var out, errOut bytes.Buffer
			err := json.Unmarshal(args, &in)
			if err == nil {
				err = work(ctx, in, &out, &errOut)
			}
			if err != nil {
				failed(&errOut, err)
				return out.String() + errOut.String(), true
			}
			return out.String(), false
		}}
}
