package main

import (
	"context"
	"slices"
	"sync"

	"github.com/geoidem/geoidem/client"
)

// deadLetters is the in-memory dead-letter sink.
type deadLetters struct {
	mu  sync.Mutex
	dls []client.DeadLetter
}

func (d *deadLetters) Put(_ context.Context, dl client.DeadLetter) error {
	dl.Body = slices.Clone(dl.Body)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dls = append(d.dls, dl)
	return nil
}

func (d *deadLetters) take() []client.DeadLetter {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.dls
	d.dls = nil
	return out
}

// redrive delivers every dead letter that did not fail permanently again,
// spread over the senders, and returns how many it re-drove and how many
// of those failed again.
func redrive(ctx context.Context, senders []*client.Sender, base string, dls []client.DeadLetter, sink *deadLetters) (n, failed int) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		next = make(chan client.DeadLetter)
	)
	for _, s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range next {
				_, err := s.Deliver(ctx, client.Delivery{URL: base + "/features", Key: d.Key, Body: d.Body, ContentType: d.ContentType})
				mu.Lock()
				n++
				if err != nil {
					failed++
				}
				mu.Unlock()
			}
		}()
	}
	for _, d := range dls {
		if d.Reason != "permanent" {
			next <- d
		}
	}
	close(next)
	wg.Wait()
	sink.take() // the re-drive's own failures are counted, not re-driven
	return n, failed
}
