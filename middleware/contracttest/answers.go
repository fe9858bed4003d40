package contracttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/geoidem/geoidem/client"
	"github.com/geoidem/geoidem/problem"
)

// answer describes a delivery's outcome for a failure message.
func answer(res client.Result, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status %d, Idempotent-Replayed: %t, after %d attempt(s)", res.StatusCode, res.Replayed, res.Attempts)
	if ct := res.Header.Get("Content-Type"); ct != "" {
		fmt.Fprintf(&b, ", Content-Type %s", ct)
	}
	fmt.Fprintf(&b, ", body %s", quote(res.Body))
	if err != nil {
		fmt.Fprintf(&b, ", error: %v", err)
	}
	return b.String()
}

// quote shows a body, shortened to 300 bytes.
func quote(body []byte) string {
	const max = 300
	if len(body) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(body[cut]) {
			cut--
		}
		return fmt.Sprintf("%q… (%d bytes)", body[:cut], len(body))
	}
	return fmt.Sprintf("%q", body)
}

// checkProblem checks an RFC 9457 problem document answered with status
// (and, when wantType is not empty, of that type). It returns what is wrong,
// or "" when nothing is.
func checkProblem(status int, header http.Header, body []byte, wantType string) string {
	var faults []string
	mt, _, err := mime.ParseMediaType(header.Get("Content-Type"))
	if err != nil || mt != problem.MediaType {
		faults = append(faults, fmt.Sprintf("Content-Type is %q, want %s", header.Get("Content-Type"), problem.MediaType))
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		faults = append(faults, "the body is not a JSON object: "+err.Error())
	} else {
		typ, _ := doc["type"].(string)
		title, _ := doc["title"].(string)
		st, _ := doc["status"].(float64)
		if typ == "" {
			faults = append(faults, `no "type" member (a string)`)
		} else if wantType != "" && typ != wantType {
			faults = append(faults, fmt.Sprintf(`"type" is %q, want %q`, typ, wantType))
		}
		if title == "" {
			faults = append(faults, `no "title" member (a string)`)
		}
		if int(st) != status || st != float64(int(st)) {
			faults = append(faults, fmt.Sprintf(`"status" member is %v, want %d`, doc["status"], status))
		}
	}
	return strings.Join(faults, "; ")
}

// problemOf checks the problem document of a failed delivery.
func problemOf(err error, wantType string) string {
	var se *client.StatusError
	if !errors.As(err, &se) {
		return "the delivery ended without an HTTP answer to judge"
	}
	return checkProblem(se.StatusCode, se.Header, se.Body, wantType)
}

// plainJSON reports whether an answer is JSON that is not a problem
// document: Content-Type application/json (or +json other than
// problem+json) and a body that parses.
func plainJSON(header http.Header, body []byte) bool {
	mt, _, err := mime.ParseMediaType(header.Get("Content-Type"))
	if err != nil || mt == problem.MediaType || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return false
	}
	return json.Valid(body)
}
