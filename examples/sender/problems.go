package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/geoidem/geoidem/client"
)

// maxProblems bounds the problems listed under a failure; its dead letter
// holds them all.
const maxProblems = 5

// problemLines lists the problems of err's answer, one per line, each
// with its JSON pointer: the "errors" member of a problem document
// (invalid-geojson and observation-time-invalid have one), as
// problem.Details reads it. nil when there is none.
func problemLines(err error) []string {
	var se *client.StatusError
	if !errors.As(err, &se) || se.Problem == nil {
		return nil
	}
	var lines []string
	for i, p := range se.Problem.Errors {
		if i == maxProblems {
			lines = append(lines, fmt.Sprintf("… and %d more (all of them in the dead letter)", len(se.Problem.Errors)-maxProblems))
			break
		}
		line := p.Pointer
		if line == "" {
			line = "(the whole body)"
		}
		if p.Detail != "" {
			line += ": " + p.Detail
		}
		if p.Rule != "" {
			line += " (" + p.Rule + ")"
		}
		if p.Truncated {
			line += " (cut short by the receiver)"
		}
		lines = append(lines, printable(line))
	}
	var truncated bool
	if json.Unmarshal(se.Problem.Extensions["truncated"], &truncated) == nil && truncated {
		lines = append(lines, "… the receiver listed only the first problems")
	}
	return lines
}

// printable replaces the control characters of s (a receiver's text, for a
// terminal) with U+FFFD.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return unicode.ReplacementChar
		}
		return r
	}, s)
}
