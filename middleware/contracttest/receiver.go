package contracttest

import (
	"fmt"
	"net/http"
	"sync"
)

// seen counts what the receiver itself answered over a run: every answer
// to a request sent to its host, by the senders, the plain requests and
// the proxies' forwards (not the proxies' own answers). It tells a wrong
// URL or missing credentials (every answer 404, or 401/403) from broken
// rules, and a receiver that never replays from one that does.
type seen struct {
	host string // the receiver's host:port

	mu       sync.Mutex
	total    int
	statuses map[int]int
	replays  int
}

func newSeen(host string) *seen { return &seen{host: host, statuses: map[int]int{}} }

// recording is the transport of the suite's clients: an
// http.RoundTripper that counts the receiver's answers in seen.
type recording struct {
	rt   http.RoundTripper
	seen *seen
}

func (r recording) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	if err == nil && r.seen != nil && req.URL.Host == r.seen.host {
		r.seen.add(resp)
	}
	return resp, err
}

func (s *seen) add(resp *http.Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total++
	s.statuses[resp.StatusCode]++
	if resp.Header.Get("Idempotent-Replayed") == "true" {
		s.replays++
	}
}

// replayed reports whether the receiver answered any request as a replay.
func (s *seen) replayed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replays > 0
}

// diagnosis says what is likely wrong when every answer was 404, or 401
// or 403: the run checked an endpoint that is not there, or was refused
// before any rule could be checked. It is "" otherwise.
func (s *seen) diagnosis() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	notFound, refused := s.statuses[http.StatusNotFound], s.statuses[http.StatusUnauthorized]+s.statuses[http.StatusForbidden]
	switch {
	case s.total == 0:
		return ""
	case notFound == s.total:
		return fmt.Sprintf("every answer from the receiver (%d) was 404 Not Found: the URL is likely wrong. "+
			"Target.URL (geoidem contract -url) must name the ingest endpoint, e.g. http://127.0.0.1:8080/features, "+
			"or its base with Target.Path (-path)", s.total)
	case refused == s.total:
		return fmt.Sprintf("every answer from the receiver (%d) was 401 Unauthorized or 403 Forbidden: the credentials are likely missing or wrong. "+
			"Send them with Target.Header (geoidem contract -header 'Authorization: …')", s.total)
	case notFound+refused == s.total:
		return fmt.Sprintf("every answer from the receiver (%d) was 404, 401 or 403: the URL or the credentials are likely wrong. "+
			"Check Target.URL and Target.Path (-url, -path) and Target.Header (-header)", s.total)
	}
	return ""
}
