// Package senderclock is the source of time of the paired sender, package
// github.com/geoidem/geoidem/client, and the way the repository's own test
// kits and examples give a sender or a file journal a clock of their own:
// [Set]. The client's public API has no clock; it runs on [System].
package senderclock

import (
	"context"
	"time"
)

// Clock is the sender's source of time. Tests inject a fake one so that
// nothing really sleeps; production code uses [System].
type Clock interface {
	// Now returns the current time. The sender measures every delay and
	// the delivery deadline as differences of Now values, so a clock whose
	// times carry a monotonic reading (as time.Now's do) is immune to wall
	// clock steps.
	Now() time.Time
	// Sleep waits for d, or until ctx is done, whichever comes first. It
	// returns ctx.Err() when ctx ended the wait, else nil. A d of zero or
	// less returns at once (still reporting a done ctx).
	Sleep(ctx context.Context, d time.Duration) error
}

// System is the real clock: time.Now (with its monotonic reading) and a
// timer. Its zero value is ready to use.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// Sleep waits on a timer for d, or until ctx is done.
func (System) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Set gives config, a *client.Config or a *client.FileJournalConfig, the
// clock c (nil for [System]). Package client installs it when it is
// initialized, so it is set for every importer of client; it panics on
// any other config.
var Set func(config any, c Clock)
