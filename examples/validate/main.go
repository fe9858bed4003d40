// Command validate checks GeoJSON files with the geoidem geojson package.
//
// Usage:
//
//	go run ./examples/validate [-json] [-strict-rhr] [FILE...]
//
// With no FILE it reads standard input. For every problem it prints
//
//	FILE: POINTER: RULE: message
//
// where POINTER is a JSON pointer, "(root)" for the whole document, and
// RULE a geojson.Rule… id, or malformed-json when the input is not JSON.
// With -json it prints instead, for each input that is not valid, one
// line {"file": FILE, "problem": DOCUMENT} where DOCUMENT is the RFC 9457
// problem document the middleware would answer.
//
// The exit status is 0 when every input is valid, 1 when any is invalid
// (malformed JSON included), and 2 on a usage or I/O error.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/geoidem/geoidem/geojson"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the command with its arguments (without the program name) and
// streams; it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print RFC 9457 problem documents as JSON lines")
	strict := fs.Bool("strict-rhr", false, "reject polygons that do not follow the right-hand rule")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: validate [-json] [-strict-rhr] [FILE...]  (standard input when no FILE)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	opts := geojson.Options{StrictRightHandRule: *strict}
	files := fs.Args()
	status := 0
	check := func(name string, data []byte) {
		err := geojson.Validate(data, opts)
		if err == nil {
			return
		}
		status = max(status, 1)
		var serr *geojson.SyntaxError
		var verr *geojson.ValidationError
		switch {
		case *asJSON && (errors.As(err, &serr) || errors.As(err, &verr)):
			doc := err.(interface{ ProblemJSON() []byte }).ProblemJSON()
			line, _ := json.Marshal(struct {
				File    string          `json:"file"`
				Problem json.RawMessage `json:"problem"`
			}{name, doc})
			fmt.Fprintf(stdout, "%s\n", line)
		case errors.As(err, &serr):
			fmt.Fprintf(stdout, "%s: (root): malformed-json: %s at offset %d\n", name, serr.Msg, serr.Offset)
		case errors.As(err, &verr):
			for _, p := range verr.Violations {
				fmt.Fprintf(stdout, "%s: %s\n", name, p)
			}
			if verr.Truncated {
				fmt.Fprintf(stdout, "%s: (root): more problems were found than listed\n", name)
			}
		default:
			fmt.Fprintf(stderr, "validate: %s: %v\n", name, err)
			status = 2
		}
	}
	if len(files) == 0 {
		data, err := io.ReadAll(stdin)
		if err != nil {
			fmt.Fprintf(stderr, "validate: reading standard input: %v\n", err)
			return 2
		}
		check("<stdin>", data)
		return status
	}
	ioErr := false
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintf(stderr, "validate: %v\n", err)
			ioErr = true
			continue
		}
		check(name, data)
	}
	if ioErr {
		return 2
	}
	return status
}
