package service

import (
	"net/http"

	"github.com/geoidem/geoidem/problem"
)

// problemRoutes serves mux, answering its own 404 and 405 (Allow kept) as
// problem documents instead of net/http's plain text.
func problemRoutes(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(&routeErrorWriter{ResponseWriter: w}, r) // a redirect passes through
	})
}

// routeErrorWriter turns a 404 or 405 written by the mux into a problem
// document and drops the mux's text; anything else passes through.
type routeErrorWriter struct {
	http.ResponseWriter
	swallow bool
}

func (w *routeErrorWriter) WriteHeader(code int) {
	switch code {
	case http.StatusNotFound:
		w.swallow = true
		w.ResponseWriter.Header().Del("X-Content-Type-Options")
		problem.Write(w.ResponseWriter, problem.Details{Type: problemNoRoute, Title: "Not found", Status: code, Detail: "This service has no such resource."})
	case http.StatusMethodNotAllowed:
		w.swallow = true
		w.ResponseWriter.Header().Del("X-Content-Type-Options")
		problem.Write(w.ResponseWriter, problem.Details{Type: problemMethodNotAllowed, Title: "Method not allowed", Status: code,
			Detail: "This resource does not accept this method; see the Allow header."})
	default:
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *routeErrorWriter) Write(p []byte) (int, error) {
	if w.swallow {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}
