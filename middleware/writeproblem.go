package middleware

import (
	"net/http"
	"time"

	"github.com/geoidem/geoidem/internal/problem"
)

// Problem is an RFC 9457 problem document that a handler (or a
// [Validator]) answers with, in the form the middleware writes its own:
// application/problem+json, the members type, title, status and detail in
// that order, without HTML escaping, not to be cached.
//
// A Problem is an error and an [HTTPProblem], so a Validator may return it
// as its refusal.
type Problem struct {
	// Type is the problem type URI. Use the package's (ProblemTypeBase and
	// a fragment listed in docs/problems.md) or your own; empty means
	// "about:blank", whose title is the status's reason phrase.
	Type string
	// Title is a short summary of the type, the same for every occurrence.
	// Empty: the status's reason phrase.
	Title string
	// Status is the HTTP status code. Zero: 500.
	Status int
	// Detail explains this occurrence; empty leaves the member out.
	Detail string
	// RetryAfter, when positive, adds Retry-After in whole seconds, rounded
	// up: for a 503 (or 429) after which the sender should retry, with the
	// same key. The middleware releases the key of a 5xx, 408 or 429, so
	// the retry runs the handler again; any other status is recorded and
	// replayed.
	RetryAfter time.Duration
}

func (p Problem) doc() problem.Doc {
	d := problem.Doc{Type: p.Type, Title: p.Title, Status: p.Status, Detail: p.Detail}
	if d.Status == 0 {
		d.Status = http.StatusInternalServerError
	}
	if d.Type == "" {
		d.Type = "about:blank"
	}
	if d.Title == "" {
		d.Title = http.StatusText(d.Status)
	}
	return d
}

// Error returns the title and, if any, the detail.
func (p Problem) Error() string {
	d := p.doc()
	if d.Detail == "" {
		return d.Title
	}
	return d.Title + ": " + d.Detail
}

// HTTPStatus returns the status the problem is answered with.
func (p Problem) HTTPStatus() int { return p.doc().Status }

// ProblemJSON returns the problem document.
func (p Problem) ProblemJSON() []byte { return problem.JSON(p.doc()) }

// WriteProblem answers p: its status, Content-Type application/problem+json,
// Cache-Control no-store, Retry-After when p.RetryAfter is positive, and
// the document as the body. Headers the handler set before (a
// WWW-Authenticate challenge, say) are kept, a Content-Length dropped.
//
// With the stores' classifiers it is the README's failure rule:
//
//	if pgstore.Transient(err) {
//		middleware.WriteProblem(w, middleware.Problem{Status: 503, Type: myTypeUnavailable, Title: "Try again", RetryAfter: time.Second})
//	} else {
//		middleware.WriteProblem(w, middleware.Problem{Status: 422, Type: myTypeRejected, Title: "Refused", Detail: "…"})
//	}
func WriteProblem(w http.ResponseWriter, p Problem) {
	d := p.doc()
	problem.Write(w, d.Status, problem.JSON(d), p.RetryAfter)
}
