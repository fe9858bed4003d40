package redisstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// batcher sends the commands of concurrent calls together (unless
// Config.NoAutoPipeline):
// a call that finds fewer than maxBatches commands or batches on their way
// sends its own command at once, on the calling goroutine, exactly as
// without a batcher; a call that finds them all busy queues its command,
// and when one of them returns, everything queued by then goes out as one
// pipeline (one write, one round trip) from a goroutine of the batcher's.
// No timer: a batch is whatever accumulated while the previous round trips
// ran, so a lone call never waits and a busy Store sends few, large
// pipelines. With a ClusterClient or Ring the pipeline is split by node by
// go-redis, and redirections are followed per command.
type batcher struct {
	client redis.UniversalClient

	mu      sync.Mutex
	queue   []*op
	spare   []*op // the previous queue's array, reused
	running int   // commands or batches being sent
}

// maxBatches is how many round trips a batcher keeps in flight at once
// before it queues commands: enough that a batch is sent while the
// previous one is on its way, few enough that batches grow under load.
const maxBatches = 2

// op is one queued command and the waiting call's side of it.
type op struct {
	cmd   redis.Cmder
	ctx   context.Context
	done  chan struct{} // receives once the command has its reply
	state atomic.Int32  // opWaiting, opDone, opAbandoned
	send  bool          // exec's: the command goes out in this batch
}

const (
	opWaiting int32 = iota
	opDone
	opAbandoned
)

var opPool = sync.Pool{New: func() any { return &op{done: make(chan struct{}, 1)} }}

// do sends cmd, alone or in a batch, and waits for its reply. It returns
// ctx's error if ctx ends before the reply arrives (the command may still
// run), and otherwise nil: the outcome is then the command's.
func (b *batcher) do(ctx context.Context, cmd redis.Cmder) error {
	b.mu.Lock()
	if b.running < maxBatches {
		b.running++
		b.mu.Unlock()
		_ = b.client.Process(ctx, cmd)
		b.finished()
		return nil
	}
	o := opPool.Get().(*op)
	o.cmd, o.ctx = cmd, ctx
	o.state.Store(opWaiting)
	b.queue = append(b.queue, o)
	b.mu.Unlock()
	select {
	case <-o.done:
	case <-ctx.Done():
		if o.state.CompareAndSwap(opWaiting, opAbandoned) {
			// The batch that takes o returns it to the pool.
			return ctx.Err()
		}
		<-o.done
	}
	o.cmd, o.ctx = nil, nil
	opPool.Put(o)
	return nil
}

// finished ends one round trip: it sends what was queued meanwhile, if
// anything, from a new goroutine, or else gives the slot up.
func (b *batcher) finished() {
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.running--
		b.mu.Unlock()
		return
	}
	batch := b.take()
	b.mu.Unlock()
	go b.send(batch)
}

// take returns the queue and starts an empty one. b.mu must be held.
func (b *batcher) take() []*op {
	batch := b.queue
	b.queue, b.spare = b.spare[:0], nil
	return batch
}

// send sends batch, then, as long as commands were queued meanwhile, those,
// and gives its slot up when the queue is empty.
func (b *batcher) send(batch []*op) {
	for {
		b.exec(batch)
		b.mu.Lock()
		if b.spare == nil {
			clear(batch)
			b.spare = batch[:0]
		}
		if len(b.queue) == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		batch = b.take()
		b.mu.Unlock()
	}
}

// exec sends the commands of batch whose callers still wait, as one
// pipeline, and wakes their callers. A command whose context ended while
// it was queued is not sent: its caller gets the context's error.
func (b *batcher) exec(batch []*op) {
	var first *op
	live := 0
	for _, o := range batch {
		o.send = false
		if o.state.Load() != opWaiting {
			continue
		}
		if err := o.ctx.Err(); err != nil {
			o.cmd.SetErr(err)
			continue
		}
		o.send = true
		if live == 0 {
			first = o
		}
		live++
	}
	switch {
	case live == 1:
		_ = b.client.Process(first.ctx, first.cmd)
	case live >= 1:
		// The batch runs under no caller's cancellation: each caller stops
		// waiting when its own context ends. Its deadline is the latest of
		// theirs, if they all have one, so that a round trip nobody waits
		// for any more does not hold its connection (with the client's
		// ContextTimeoutEnabled); else the client's timeouts bound it.
		ctx := context.Background()
		var latest time.Time
		for _, o := range batch {
			if !o.send {
				continue
			}
			d, ok := o.ctx.Deadline()
			if !ok {
				latest = time.Time{}
				break
			}
			if d.After(latest) {
				latest = d
			}
		}
		if !latest.IsZero() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, latest)
			defer cancel()
		}
		pipe := b.client.Pipeline()
		for _, o := range batch {
			if o.send {
				_ = pipe.Process(ctx, o.cmd)
			}
		}
		_, _ = pipe.Exec(ctx)
	}
	for _, o := range batch {
		if o.state.CompareAndSwap(opWaiting, opDone) {
			o.done <- struct{}{}
			continue
		}
		// Abandoned by its caller.
		o.cmd, o.ctx = nil, nil
		opPool.Put(o)
	}
}
