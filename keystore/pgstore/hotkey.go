package pgstore

// A hot key's claims share statements. A claim of a key of which
// hotKeyClaims claims are in flight already (each in a statement of its
// own or in a batch statement) waits for the next batch statement, even
// when a slot is free, rather than run a statement of its own beside
// them: once one of them ends, the claims that gathered meanwhile go in
// one statement, which reads the key once for all of them (runClaimBatch
// answers the others with the first's live entry). Replays and duplicate
// deliveries of one key from many clients at once then cost the database
// one read a round trip instead of one each. Every claim is still
// answered by a statement that starts after the claim was made, as alone.
//
// hotKeyClaims is how many claims of one key may be in flight before its
// further claims wait: a sender's few concurrent duplicates never wait.
// Made to wait behind a single claim, two to four concurrent replays of
// one key took two to three times as long each (a claim waits for the
// statement in flight, then for its own).
const hotKeyClaims = 4

// claimQueue is the batchQueue of claims, which also knows the keys of
// the claims in flight.
type claimQueue struct {
	batchQueue[*claimWaiter]
	busy map[string]int // key → its claims in flight, alone or in batches; q.mu
}

// mark counts a claim of key in flight. q.mu is held.
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

// next is batchQueue.next for the claim statement that ended: the claim of
// key (if not "") or the claims ended are no longer in flight, and those
// of the batch it returns are.
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
