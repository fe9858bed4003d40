package main

import (
	"context"
	"sync"

	"github.com/geoidem/geoidem/client"
)

// resend delivers every event once more, after the re-drive, with its own
// key and payload, straight to the receiver: as a sender whose journal
// replays everything would. Each should be answered from its record (a
// replay); a key whose record the key store lost (a Redis restarted
// without persistence) runs its handler again, and the run count sees it.
// It returns how many events it sent and how many answers were replays.
func resend(ctx context.Context, senders []*client.Sender, base string, evs []event) (n, replayed int) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		next = make(chan *event)
	)
	for _, s := range senders {
		wg.Go(func() {
			for e := range next {
				res, _ := s.Deliver(ctx, client.Delivery{URL: base + "/features", Key: e.key, Body: e.body, ContentType: "application/geo+json"})
				mu.Lock()
				n++
				if res.Replayed {
					replayed++
				}
				mu.Unlock()
			}
		})
	}
	for i := range evs {
		if ctx.Err() != nil {
			break
		}
		next <- &evs[i]
	}
	close(next)
	wg.Wait()
	return n, replayed
}
