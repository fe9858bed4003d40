// Package hijack says whether a ResponseWriter can be hijacked, for the
// writers that wrap one: such a wrapper should be an http.Hijacker exactly
// when the writer it wraps is, or unwraps to one, so that a handler's type
// assertion sees what the server offers.
package hijack

import "net/http"

// maxDepth bounds the Unwrap chain followed, against a writer that
// unwraps to itself.
const maxDepth = 32

// Possible reports whether w, or a writer it unwraps to (an
// Unwrap() http.ResponseWriter method, as http.ResponseController
// follows), is an http.Hijacker.
func Possible(w http.ResponseWriter) bool {
	for depth := 0; w != nil && depth < maxDepth; depth++ {
		if _, ok := w.(http.Hijacker); ok {
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
	return false
}
