package main

import (
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/geoidem/geoidem/client"
)

// tally counts what the senders saw, attempt by attempt.
type tally struct {
	attempts, replays, conflicts, invalid, unavailable, netErrors atomic.Int64
}

func (t *tally) observe(a client.Attempt) {
	t.attempts.Add(1)
	if a.Replayed {
		t.replays.Add(1)
	}
	switch a.StatusCode {
	case http.StatusConflict:
		t.conflicts.Add(1)
	case http.StatusUnprocessableEntity:
		t.invalid.Add(1)
	case http.StatusServiceUnavailable:
		t.unavailable.Add(1)
	case 0:
		t.netErrors.Add(1)
	}
}

// newSenders returns n paired senders sharing one transport without
// keep-alives (so that every fault reaches a sender rather than being
// re-sent by net/http), each with its own seeded jitter, sending each
// attempt to another spelling of its path when spellings is set.
func newSenders(n, attempts int, seed uint64, t *tally, dl client.DeadLetterSink, spellings bool) ([]*client.Sender, func(), error) {
	var prepare func(*http.Request, client.Attempt) error
	if spellings {
		prepare = spellPath
	}
	tr := &http.Transport{DisableKeepAlives: true, MaxConnsPerHost: 0}
	hc := &http.Client{Transport: tr}
	ss := make([]*client.Sender, n)
	for i := range ss {
		s, err := client.New(hc, client.Config{
			Backoff:        client.Backoff{Base: 10 * time.Millisecond, Cap: 200 * time.Millisecond},
			MaxAttempts:    attempts,
			Deadline:       deliveryLimit,
			AttemptTimeout: attemptTimeout,
			MaxRetryAfter:  maxRetryAfter,
			DeadLetter:     dl,
			OnAttempt:      t.observe,
			PrepareAttempt: prepare,
			Rand:           rand.NewPCG(seed, uint64(i)+1),
		})
		if err != nil {
			return nil, nil, err
		}
		ss[i] = s
	}
	return ss, tr.CloseIdleConnections, nil
}
