package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/geoidem/geoidem/internal/record"
)

// replay writes a recorded response, enc (a Claim's Record), marked as a
// replay, and returns its status. Only allow-listed headers are replayed,
// even from a record that a handler wrote itself (keystore.Hold), so
// Set-Cookie and its kind can never be replayed. Bytes that are not a
// record encoding, and a record whose status is outside 200–599, cannot be
// a final answer (net/http would panic on some): they are answered 500 with
// a response-not-recorded problem instead, never a panic.
//
// Neither the store nor the middleware changes a Claim's Record, so the
// record is read in place (record.Scan): its header values and body are
// enc's own bytes, handed on as they are. A record as the recorder writes
// it (its fields in name order, no trailers) is walked once, each field
// looked up in the sorted allow-list and put straight into the response's
// header, rather than the record looked up for every name the allow-list
// has; any other goes through a header map of its own (replayView).
func (m *Middleware) replay(ctx context.Context, w http.ResponseWriter, key string, enc []byte) int {
	status, fields, body, err := record.Scan(enc)
	if err != nil || status < 200 || status > 599 {
		return m.unusable(ctx, w, key, status, err)
	}
	if !fields.Sorted {
		return m.replayView(ctx, w, key, enc)
	}
	h := w.Header()
	// One slice for the values of every field and, after them, the two
	// fields the middleware adds; each is its own slice (capacity its
	// length), so that appending to one never changes another.
	room := make([]string, fields.Values+2)
	for fields.Len > 0 {
		name, vs, rest := fields.Next(room)
		room = rest
		if strings.HasPrefix(name, http.TrailerPrefix) {
			// Recorded trailers: what this walk has put in h, the
			// general path puts there again, the same.
			return m.replayView(ctx, w, key, enc)
		}
		m.replayField(h, name, vs)
	}
	room[0] = "true"
	h["Idempotent-Replayed"] = room[0:1:1]
	room[1] = strconv.Itoa(len(body))
	h["Content-Length"] = room[1:2:2]
	w.WriteHeader(status)
	_, _ = w.Write(body)
	return status
}

// replayField puts a recorded field (not a trailer) into h if the
// allow-list has its name, and a recorded "Cache-Control: no-store" (the
// middleware's own problem documents) whether or not it has.
func (m *Middleware) replayField(h http.Header, name string, vs []string) {
	if _, ok := searchName(m.recordHeaders, name); ok {
		h[name] = vs
	}
	if name == "Cache-Control" && len(vs) == 1 && vs[0] == "no-store" {
		h.Set("Cache-Control", "no-store")
	}
}

// unusable answers the replay of enc, which is no record encoding (err) or
// has a status outside 200–599, with 500.
func (m *Middleware) unusable(ctx context.Context, w http.ResponseWriter, key string, status int, err error) int {
	what := fmt.Sprintf("has status %d", status)
	if err != nil {
		what = "is not a record encoding"
	}
	m.log.LogAttrs(ctx, slog.LevelError, "idempotency record is unusable; answered 500", slog.String("key", key), slog.String("record", what))
	status = http.StatusInternalServerError
	w.Header().Set("Idempotent-Replayed", "true")
	writeProblem(w, status, problemJSON(ProblemNotRecorded, "Recorded response unusable", status,
		"The request was executed once, but the response recorded for it "+what+", which cannot be replayed."), 0)
	return status
}

// replayView is replay of any record encoding (enc, which Scan accepted,
// with a status within 200–599) through a header map of its own
// (record.View): one whose fields are out of order (earlier versions of
// redisstore wrote them so), or has recorded trailers.
func (m *Middleware) replayView(ctx context.Context, w http.ResponseWriter, key string, enc []byte) int {
	rec, err := record.View(enc)
	if err != nil {
		return m.unusable(ctx, w, key, rec.StatusCode, err)
	}
	// A record holds few fields: they are walked once, each looked up in
	// the sorted allow-list, rather than the record looked up for every
	// name the allow-list has.
	h := w.Header()
	recordedTrailers := false
	for k, vs := range rec.Header {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			recordedTrailers = true
			continue
		}
		m.replayField(h, k, vs)
	}
	var trailers []int // of recordHeaders, recorded under trailerKeys; sent as trailers, so chunked
	if recordedTrailers {
		for i, k := range m.trailerKeys {
			if _, ok := rec.Header[k]; ok {
				trailers = append(trailers, i)
				h.Add("Trailer", m.recordHeaders[i])
			}
		}
	}
	// The two fields the middleware adds share one backing array; each is
	// its own slice (capacity 1), so that appending to one never changes
	// the other.
	added := make([]string, 2)
	added[0] = "true"
	h["Idempotent-Replayed"] = added[0:1:1]
	if trailers == nil {
		added[1] = strconv.Itoa(len(rec.Body))
		h["Content-Length"] = added[1:2:2]
	}
	w.WriteHeader(rec.StatusCode)
	_, _ = w.Write(rec.Body)
	for _, i := range trailers {
		h[m.recordHeaders[i]] = rec.Header[m.trailerKeys[i]]
	}
	return rec.StatusCode
}
