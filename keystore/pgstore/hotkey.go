package pgstore

// A hot key's claims share statements. A claim of a key that a claim
// statement in flight already reads waits for the next batch statement,
// even when a slot is free, rather than run a statement of its own beside
// it: once that statement ends, the claims that gathered meanwhile go in
// one statement, which reads the key once for all of them (runClaimBatch
// answers the others with the first's live entry). Replays and duplicate
// deliveries of one key, which arrive together, then cost the database one
// read a round trip instead of one each. Every claim is still answered by
// a statement that starts after the claim was made, as alone.

// claimQueue is the batchQueue of claims, which also knows the keys its
// statements in flight read.
type claimQueue struct {
	batchQueue[*claimWaiter]
	busy map[string]int // key → claim statements in flight that read it; q.mu
}

// mark counts key as read by a statement in flight. q.mu is held.
func (q *claimQueue) mark(key string) {
	if q.busy == nil {
		q.busy = map[string]int{}
	}
	q.busy[key]++
}

// unmark undoes mark. q.mu is held.
func (q *claimQueue) unmark(key string) {
	if q.busy[key] <= 1 {
		delete(q.busy, key)
		return
	}
	q.busy[key]--
}

// next is batchQueue.next for the claim statement that ended, which read
// key (if not "") and the keys of the claims ended: their keys are no
// longer busy, and those of the batch it returns are.
func (q *claimQueue) next(key string, ended []*claimWaiter) []*claimWaiter {
	q.mu.Lock()
	defer q.mu.Unlock()
	if key != "" {
		q.unmark(key)
	}
	for _, w := range ended {
		q.unmark(w.key)
	}
	batch := q.nextLocked()
	for _, w := range batch {
		q.mark(w.key)
	}
	return batch
}
