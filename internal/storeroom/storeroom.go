// Package storeroom keeps a store's answer to "is there room for a new
// key?", from samples of what the store holds taken in the background of
// the claims that ask, at most once an interval: the plumbing of the
// whole-store bounds of redisstore (MaxMemory) and pgstore (MaxKeys).
package storeroom

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/geoidem/geoidem/keystore"
)

// A Sample reports whether the store is full and, when it is, how long
// until room frees up by itself (zero: it cannot tell). An error leaves
// the last answer as it was.
type Sample func(ctx context.Context) (full bool, retryAfter time.Duration, err error)

// Room is the last sample's answer. Configure Every, Timeout and Sample
// before first use; the zero Room with Sample nil is never full.
type Room struct {
	// Every is the least time between two samples.
	Every time.Duration
	// Timeout bounds one sample.
	Timeout time.Duration
	// Sample takes one.
	Sample Sample

	due  atomic.Int64 // Unix nanoseconds when the next sample is due
	busy atomic.Bool  // a sample is under way
	full atomic.Bool
	wait atomic.Int64 // while full: the RetryAfter sampled, in nanoseconds
	at   atomic.Int64 // Unix nanoseconds of that sample
}

// Full returns the refusal of a new key while the last sample found the
// store full, with RetryAfter counted down from that sample (at least a
// millisecond), and nil otherwise. When a sample is due it starts one in
// the background: Full never waits for one.
func (r *Room) Full() *keystore.FullError {
	if r.Sample == nil {
		return nil
	}
	now := time.Now().UnixNano()
	if now >= r.due.Load() && r.busy.CompareAndSwap(false, true) {
		r.due.Store(now + int64(r.Every))
		go func() {
			defer r.busy.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
			defer cancel()
			r.take(ctx)
		}()
	}
	if !r.full.Load() {
		return nil
	}
	wait := time.Duration(r.wait.Load() - (now - r.at.Load()))
	return &keystore.FullError{RetryAfter: max(wait, time.Millisecond)}
}

// SampleNow takes a sample on the calling goroutine, bounded by Timeout,
// and puts the next one off by Every.
func (r *Room) SampleNow(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	r.take(ctx)
	r.due.Store(time.Now().Add(r.Every).UnixNano())
}

// Soon makes the next Full start a sample, due or not, unless the last
// one found the store full already.
func (r *Room) Soon() {
	if !r.full.Load() {
		r.due.Store(0)
	}
}

func (r *Room) take(ctx context.Context) {
	at := time.Now().UnixNano()
	full, wait, err := r.Sample(ctx)
	if err != nil {
		return
	}
	if full {
		r.wait.Store(int64(wait))
		r.at.Store(at)
	}
	r.full.Store(full)
}
