package middleware

import (
	"sync"
	"testing"

	"github.com/geoidem/geoidem/keystore"
)

// TestNewToken checks the tokens of newToken, drawn from pooled batches by
// concurrent claims: never zero, below 2⁶³ (pgstore's token column is a
// positive bigint), never repeated, through several batches each.
func TestNewToken(t *testing.T) {
	const goroutines, each = 4, 1000 // about 16 batches of 64 per goroutine
	var (
		mu   sync.Mutex
		seen = make(map[keystore.Token]bool, goroutines*each)
		wg   sync.WaitGroup
	)
	for range goroutines {
		wg.Go(func() {
			tokens := make([]keystore.Token, each)
			for i := range tokens {
				tokens[i] = newToken()
			}
			mu.Lock()
			defer mu.Unlock()
			for _, tok := range tokens {
				if tok == 0 || tok >= 1<<63 {
					t.Errorf("token %d, want one of 1 to 2⁶³-1", tok)
				}
				if seen[tok] {
					t.Errorf("token %d repeated", tok)
				}
				seen[tok] = true
			}
		})
	}
	wg.Wait()
}
