package middleware

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/geoidem/geoidem/internal/hijack"
	"github.com/geoidem/geoidem/internal/record"
)

// recorder passes a handler's response through to the client and keeps a
// copy to record, as the record's encoding (record.Append), written
// as the response goes by: the status and the allow-listed headers as they
// stood at WriteHeader, then the body; allow-listed trailers are added when
// the handler returns. It writes through rather than buffering, so streaming
// keeps working, and it keeps what the handler wrote even when the client
// has gone.
//
// Every recorded byte counts against the limit (Config.MaxRecordBytes, the
// whole encoding): the headers at WriteHeader, each body write, the
// trailers at the end. Over it, what is recorded is record.TooLarge
// of the status, whatever path the response took (a body, headers alone, a
// flush, a trailer).
//
// It is an http.Flusher (a flush that the writers beneath cannot do is a
// no-op), and it lets http.ResponseController reach the writer beneath
// (Unwrap). It is never an http.Hijacker itself: a request whose writer can
// be hijacked gets a hijacker instead, chosen once per request by
// hijacker.writer, so that type assertions see what the server offers.
type recorder struct {
	w     http.ResponseWriter
	allow []string // canonical header names to record, sorted
	// trailerKeys are http.TrailerPrefix + each name of allow, by index.
	trailerKeys []string
	limit       int
	status      int      // 0 until the final status is written
	trailers    []string // allowed names declared in the Trailer header at WriteHeader
	size        int64    // bytes the handler wrote in all
	tooLong     bool     // the record exceeds limit: enc is incomplete
	hijacked    bool     // the handler took the connection over
	declared    int64    // the Content-Length at WriteHeader; -1 if none

	// enc is the record's encoding as far as it goes: two bytes for the
	// status (every status from 200 to 599 takes two), written by record;
	// the count of header fields and the fields, in name order (allow is
	// sorted), from WriteHeader; then the body, from bodyAt.
	enc    []byte
	bodyAt int
}

// hijacker is a recorder whose writer, or a writer it unwraps to, is an
// http.Hijacker: it is one too, and notes the hijack.
type hijacker struct{ recorder }

// writer returns the ResponseWriter to hand to the handler: h itself when
// the writer beneath can be hijacked, else its recorder.
func (h *hijacker) writer() http.ResponseWriter {
	if hijack.Possible(h.w) {
		return h
	}
	return &h.recorder
}

// Hijack hijacks the connection beneath; once it has, the response can
// never be replayed.
func (h *hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.w).Hijack()
	if err == nil {
		h.hijacked = true
	}
	return c, rw, err
}

// FlushError flushes the writer beneath, writing a 200 status first if none
// was written, as net/http does. http.ResponseController uses it.
func (r *recorder) FlushError() error {
	if r.status == 0 && !r.hijacked {
		r.WriteHeader(http.StatusOK)
	}
	return http.NewResponseController(r.w).Flush()
}

// Flush is FlushError without its error, for http.Flusher.
func (r *recorder) Flush() { _ = r.FlushError() }

func (r *recorder) Header() http.Header { return r.w.Header() }

func (r *recorder) WriteHeader(code int) {
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols { // informational: not the final answer
		r.w.WriteHeader(code)
		return
	}
	if r.status == 0 {
		r.status = code
		r.snapshot()
	}
	r.w.WriteHeader(code) // a superfluous call is net/http's to report
}

// snapshot encodes the headers to record as they stand now (at the final
// status, or when the handler returns without one).
func (r *recorder) snapshot() {
	src := r.w.Header()
	found, contentLength, trailer := r.allowed(src, &[maxWalked]allowedField{})
	r.declared = -1
	if cl := contentLength; len(cl) == 1 {
		if n, err := strconv.ParseInt(cl[0], 10, 64); err == nil && n >= 0 {
			r.declared = n
		}
	}
	for _, v := range trailer {
		for name := range strings.SplitSeq(v, ",") {
			if name = http.CanonicalHeaderKey(strings.TrimSpace(name)); slices.Contains(r.allow, name) {
				r.trailers = append(r.trailers, name)
			}
		}
	}
	// One pass: the fields after a byte kept for their count (allow has
	// fewer than 0x80 names: New checks), then the count.
	r.enc = append(r.enc[:0], 0, 0, 0)
	fields := 0
	for _, f := range found {
		if name := r.allow[f.i]; !slices.Contains(r.trailers, name) {
			r.enc = record.AppendHeaderField(r.enc, name, f.values)
			fields++
		}
	}
	r.enc[2] = byte(fields)
	r.bodyAt = len(r.enc)
	r.tooLong = len(r.enc) > r.limit
}

// maxWalked is the most fields a header map may have for allowed and
// hasTrailers to walk it rather than look up each allowed name in it.
const maxWalked = 16

// allowedField is a field of a response's header that the recorder
// records: its name's index in recorder.allow, and its values.
type allowedField struct {
	i      int
	values []string
}

// allowed returns the fields of src whose names r.allow has, in r.allow's
// order, in room's array when they fit, and src's Content-Length and
// Trailer fields. A response has few fields: when it has fewer than
// r.allow names, they are walked once, for all three, each name looked up
// in the sorted r.allow, rather than src looked up for each allowed name
// and for the two others.
func (r *recorder) allowed(src http.Header, room *[maxWalked]allowedField) (found []allowedField, contentLength, trailer []string) {
	found = room[:0]
	if len(src) < len(r.allow) && len(src) <= maxWalked {
		for k, vs := range src {
			switch k {
			case "Content-Length":
				contentLength = vs
			case "Trailer":
				trailer = vs
			}
			if i, ok := searchName(r.allow, k); ok {
				found = append(found, allowedField{i, vs})
			}
		}
		slices.SortFunc(found, func(a, b allowedField) int { return a.i - b.i })
		return found, contentLength, trailer
	}
	for i, name := range r.allow {
		if vs, ok := src[name]; ok {
			found = append(found, allowedField{i, vs})
		}
	}
	return found, src["Content-Length"], src["Trailer"]
}

// searchName is slices.BinarySearch(names, name) for names sorted, with
// one comparison of strings a step where the generic one makes up to
// four (cmp.Compare): every response's fields and every replayed field
// are looked up in the allow-list.
func searchName(names []string, name string) (int, bool) {
	lo, hi := 0, len(names)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if names[h] < name {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo, lo < len(names) && names[lo] == name
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	r.size += int64(len(p))
	if !r.tooLong {
		if len(r.enc)+len(p) > r.limit {
			r.tooLong, r.enc = true, r.enc[:r.bodyAt]
		} else {
			r.enc = append(r.enc, p...)
		}
	}
	return r.w.Write(p)
}

// WriteString is Write without converting s to a byte slice, for
// io.WriteString.
func (r *recorder) WriteString(s string) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	r.size += int64(len(s))
	if !r.tooLong {
		if len(r.enc)+len(s) > r.limit {
			r.tooLong, r.enc = true, r.enc[:r.bodyAt]
		} else {
			r.enc = append(r.enc, s...)
		}
	}
	return io.WriteString(r.w, s)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.w }

// finalStatus is the status the client received: 200 when the handler wrote
// nothing at all, as net/http answers then, and 0 when it hijacked the
// connection before writing a status.
func (r *recorder) finalStatus() int {
	if r.status == 0 && !r.hijacked {
		return http.StatusOK
	}
	return r.status
}

// replayable reports whether the response can be replayed: not after a 101
// Switching Protocols or a hijacked connection, whose answer went past the
// recorder in another protocol.
func (r *recorder) replayable() bool {
	return !r.hijacked && r.status != http.StatusSwitchingProtocols
}

// notReplayable is what to store for a response that cannot be replayed: a
// terminal 422 problem saying so, so that a retry learns that the request
// was executed and never runs it again.
func notReplayable() record.Record {
	status := http.StatusUnprocessableEntity
	return record.Record{
		StatusCode: status,
		Header:     problemHeader(),
		Body: problemJSON(ProblemNotReplayable, "Response cannot be replayed", status,
			"The request was executed once, but its response switched protocols or took the connection over, so it cannot be replayed; use a new key for a new request."),
	}
}

// record returns the encoding to store, at most limit bytes long: the
// response's own (with its allow-listed trailers, recorded under
// http.TrailerPrefix), or record.TooLarge of its status when that
// is longer, or notReplayable. Call it once, after the handler returned
// (and snapshot, for a handler that wrote nothing).
func (r *recorder) record() []byte {
	if !r.replayable() {
		return record.Append(nil, notReplayable())
	}
	status := r.finalStatus()
	src := r.w.Header()
	if status >= record.MinStatusCode && status <= record.MaxStatusCode && !r.hasTrailers(src) {
		if r.tooLong {
			return record.Append(nil, record.TooLarge(status))
		}
		binary.AppendVarint(r.enc[:0], int64(status)) // into the two bytes kept for it
		return r.enc
	}
	// The rare response the encoding cannot take as it goes (recorded
	// trailers, a status outside 200–599): decoded, completed, encoded.
	rec := record.Record{StatusCode: status}
	if h, err := record.DecodeHeader(r.enc[2:r.bodyAt]); err == nil && len(h) > 0 {
		rec.Header = h
	}
	if !r.tooLong && len(r.enc) > r.bodyAt {
		rec.Body = r.enc[r.bodyAt:]
	}
	for i, name := range r.allow {
		vs, ok := src[r.trailerKeys[i]]
		if !ok && slices.Contains(r.trailers, name) {
			vs, ok = src[name]
		}
		if ok {
			if rec.Header == nil {
				rec.Header = http.Header{}
			}
			rec.Header[r.trailerKeys[i]] = slices.Clone(vs)
		}
	}
	if r.tooLong || record.Len(rec) > r.limit {
		rec = record.TooLarge(status)
	}
	return record.Append(nil, rec)
}

// hasTrailers reports whether the response has trailers to record, given
// its header map src.
func (r *recorder) hasTrailers(src http.Header) bool {
	for _, name := range r.trailers { // declared, and allowed
		if _, ok := src[name]; ok {
			return true
		}
	}
	if len(src) < len(r.trailerKeys) && len(src) <= maxWalked { // as in allowed
		for k := range src {
			if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
				if _, ok := searchName(r.allow, name); ok {
					return true
				}
			}
		}
		return false
	}
	for _, key := range r.trailerKeys {
		if _, ok := src[key]; ok {
			return true
		}
	}
	return false
}

// interrupted returns what to store for a response whose handler panicked
// after sending a final status: the response itself when its body is
// provably complete (as long as the Content-Length declared at WriteHeader),
// else a problem document under that status saying the response was not
// recorded, since its body may be incomplete.
func (r *recorder) interrupted() []byte {
	if !r.replayable() {
		return record.Append(nil, notReplayable())
	}
	if r.declared >= 0 && r.size == r.declared && !r.tooLong {
		return r.record()
	}
	return record.Append(nil, record.Record{
		StatusCode: r.status,
		Header:     problemHeader(),
		Body: problemJSON(ProblemNotRecorded, "Response not recorded", r.status,
			"The request was executed once and answered with this status, but the handler failed while sending its response, so it cannot be replayed."),
	})
}
