package middleware

import (
	"net/http"

	"github.com/geoidem/geoidem/keystore"
)

// recorder passes a handler's response through to the client and keeps a
// copy to record: the status and the allow-listed headers as they stood at
// WriteHeader, and the body up to a limit. It writes through rather than
// buffering, so streaming and Flush keep working (through Unwrap and
// http.ResponseController), and it keeps what the handler wrote even when
// the client has gone.
type recorder struct {
	w       http.ResponseWriter
	allow   []string // canonical header names to record
	limit   int
	status  int // 0 until the final status is written
	header  http.Header
	body    []byte
	size    int64 // bytes the handler wrote in all
	tooLong bool  // size exceeded limit: body is incomplete
}

func (r *recorder) Header() http.Header { return r.w.Header() }

func (r *recorder) WriteHeader(code int) {
	if code >= 100 && code < 200 { // informational: not the final answer
		r.w.WriteHeader(code)
		return
	}
	if r.status == 0 {
		r.status = code
		r.snapshot()
	}
	r.w.WriteHeader(code) // a superfluous call is net/http's to report
}

func (r *recorder) snapshot() {
	src := r.w.Header()
	fields, values := 0, 0
	for _, name := range r.allow {
		if vs, ok := src[name]; ok {
			fields, values = fields+1, values+len(vs)
		}
	}
	if fields == 0 {
		return
	}
	r.header = make(http.Header, fields)
	all := make([]string, 0, values) // one backing array for every value
	for _, name := range r.allow {
		if vs, ok := src[name]; ok {
			all = append(all, vs...)
			r.header[name] = all[len(all)-len(vs) : len(all) : len(all)]
		}
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	r.size += int64(len(p))
	if !r.tooLong {
		if len(r.body)+len(p) > r.limit {
			r.tooLong, r.body = true, nil
		} else {
			r.body = append(r.body, p...)
		}
	}
	return r.w.Write(p)
}

// keepNoStore records Cache-Control: no-store whatever the allow-list says:
// for problem documents the middleware writes itself, whose replays must not
// be cached either.
func (r *recorder) keepNoStore() {
	if r.header == nil {
		r.header = http.Header{}
	}
	r.header.Set("Cache-Control", "no-store")
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.w }

// finalStatus is the status the client received: 200 when the handler wrote
// nothing at all, as net/http answers then.
func (r *recorder) finalStatus() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

// record returns what to store. A body over the limit is replaced by a
// problem document that says so, under the original status, so that a retry
// learns the outcome instead of running the handler again.
func (r *recorder) record() keystore.Record {
	status := r.finalStatus()
	if r.tooLong {
		return keystore.Record{
			StatusCode: status,
			Header:     http.Header{"Content-Type": {"application/problem+json"}, "Cache-Control": {"no-store"}},
			Body: problemJSON(ProblemNotRecorded, "Response too large to replay", status,
				"The request was executed once and answered with this status, but its response body was larger than the middleware records, so it cannot be replayed."),
		}
	}
	return keystore.Record{StatusCode: status, Header: r.header, Body: r.body}
}

// interrupted returns what to store for a response whose handler panicked
// after sending a final status: a problem document under that status saying
// the response was not recorded, since its body may be incomplete.
func (r *recorder) interrupted() keystore.Record {
	return keystore.Record{
		StatusCode: r.status,
		Header:     http.Header{"Content-Type": {"application/problem+json"}, "Cache-Control": {"no-store"}},
		Body: problemJSON(ProblemNotRecorded, "Response not recorded", r.status,
			"The request was executed once and answered with this status, but the handler failed while sending its response, so it cannot be replayed."),
	}
}
