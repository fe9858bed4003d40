package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/geoidem/geoidem/client"
)

// The waits between attempts, for the progress line: a delivery that
// waits out a Retry-After (a receiver whose store is full) must not look
// like one that hangs.
//
// The sender tells what follows each attempt (Config.OnAttempt: the delay
// and whether it came from Retry-After, the answer) and then waits on its
// clock; waitClock is that clock, and brackets each wait exactly. The wait
// is matched with its attempt by the delivery's key, which the worker puts
// in the context of the delivery.

// jobKey is the context key of the idempotency key of the delivery a
// worker runs.
type jobKey struct{}

// waitClock is the sender's clock, counting its waits on out.
type waitClock struct {
	client.Clock
	out *outcome
}

// Sleep waits d on the clock, counted as a wait of its delivery, with the
// cause its last attempt gave.
func (c waitClock) Sleep(ctx context.Context, d time.Duration) error {
	key, _ := ctx.Value(jobKey{}).(string)
	cause := c.out.waitStart(key, d > 0)
	if d > 0 {
		defer c.out.waitEnd(cause)
	}
	return c.Clock.Sleep(ctx, d)
}

// attempted notes the cause of the wait that follows a, if one does.
func (o *outcome) attempted(a client.Attempt) {
	if a.Final {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.causes == nil {
		o.causes = map[string][]string{}
	}
	// A queue per key: the same event twice in the input may be delivered
	// by two workers at once.
	o.causes[a.Key] = append(o.causes[a.Key], waitCause(a))
}

// waitStart takes the cause of the wait that starts now for key, and
// counts the wait if it is one (counted).
func (o *outcome) waitStart(key string, counted bool) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	cause := "backoff"
	if q := o.causes[key]; len(q) > 0 {
		cause = q[0]
		if len(q) == 1 {
			delete(o.causes, key)
		} else {
			o.causes[key] = q[1:]
		}
	}
	if counted {
		if o.waiting == nil {
			o.waiting = map[string]int{}
		}
		o.waiting[cause]++
		o.draw()
	}
	return cause
}

// waitEnd ends a wait that waitStart counted.
func (o *outcome) waitEnd(cause string) {
	o.mu.Lock()
	defer o.mu.Unlock()
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
