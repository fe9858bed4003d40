package main

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/geoidem/geoidem/client"
)

// The waits between attempts, for the progress line: a delivery that
// waits out a Retry-After (a receiver whose store is full) must not look
// like one that hangs.
//
// The sender opens each wait with the attempt it follows
// (Config.OnAttempt: the delay, whether it came from Retry-After, the
// answer) and closes it with the same attempt (Config.OnWaitEnd), so the
// cause travels with both hooks and nothing needs matching.

// waitStarts counts the wait that follows a, if one does.
func (o *outcome) waitStarts(a client.Attempt) {
	if a.Final || a.Delay <= 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.waiting == nil {
		o.waiting = map[string]int{}
	}
	o.waiting[waitCause(a)]++
	o.draw()
}

// waitEnds ends the wait that waitStarts counted for a.
func (o *outcome) waitEnds(a client.Attempt) {
	if a.Delay <= 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	cause := waitCause(a)
	if o.waiting[cause]--; o.waiting[cause] <= 0 {
		delete(o.waiting, cause)
	}
	o.draw()
}

// waitCause says why the sender waits after a: "retry-after" (the
// receiver's Retry-After) or "backoff" (the sender's own delay), then the
// answer: its status and its problem type's name ("503 store-full"), or
// "no answer".
func waitCause(a client.Attempt) string {
	how := "backoff"
	if a.FromRetryAfter {
		how = "retry-after"
	}
	var se *client.StatusError
	if !errors.As(a.Err, &se) {
		return how + " no answer"
	}
	what := strconv.Itoa(se.StatusCode)
	if p := se.Problem; p != nil && p.Name() != "" {
		what += " " + p.Name()
	}
	return how + " " + what
}

// waits describes the waits in progress, "" when there are none:
// "waiting 8 (retry-after 503 store-full)", or with several causes,
// "waiting 8 (5 retry-after 503 store-full, 3 backoff 502)". o.mu is
// held.
func (o *outcome) waits() string {
	n := 0
	causes := make([]string, 0, len(o.waiting))
	for c, k := range o.waiting {
		n += k
		causes = append(causes, c)
	}
	if n == 0 {
		return ""
	}
	if len(causes) == 1 {
		return fmt.Sprintf("waiting %d (%s)", n, causes[0])
	}
	slices.SortFunc(causes, func(a, b string) int {
		return cmp.Or(cmp.Compare(o.waiting[b], o.waiting[a]), strings.Compare(a, b))
	})
	parts := make([]string, len(causes))
	for i, c := range causes {
		parts[i] = fmt.Sprintf("%d %s", o.waiting[c], c)
	}
	return fmt.Sprintf("waiting %d (%s)", n, strings.Join(parts, ", "))
}
