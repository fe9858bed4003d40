package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/geoidem/geoidem/client"
)

// outcome tallies the deliveries.
type outcome struct {
	total    int
	progress io.Writer // the terminal, or nil for no progress line

	mu                              sync.Mutex
	done, delivered, replayed       int
	permanent, gaveUp, deadLettered int
}

// countingSink counts the dead letters its file took.
type countingSink struct {
	*client.JSONLinesSink
	n atomic.Int64
}

// Put writes dl and counts it if the write succeeded.
func (s *countingSink) Put(ctx context.Context, dl client.DeadLetter) error {
	err := s.JSONLinesSink.Put(ctx, dl)
	if err == nil {
		s.n.Add(1)
	}
	return err
}

// record counts one finished delivery, reports a failure on stderr and
// redraws the progress line.
func (o *outcome) record(f feature, res client.Result, err error, stderr io.Writer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done++
	switch {
	case err == nil:
		o.delivered++
		if res.Replayed {
			o.replayed++
		}
	case errors.Is(err, client.ErrPermanent):
		o.permanent++
	default:
		o.gaveUp++
	}
	if err != nil {
		if o.progress != nil {
			fmt.Fprint(o.progress, "\r\033[K") // clear the progress line first
		}
		fmt.Fprintf(stderr, "sender: %s: %v\n", f.source, err)
	}
	if o.progress != nil {
		fmt.Fprintf(o.progress, "\r\033[K%d/%d  delivered %d (replayed %d)  failed %d",
			o.done, o.total, o.delivered, o.replayed, o.permanent+o.gaveUp)
	}
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
