package redisstore

// RoundTripsInFlight returns how many commands or batches s's auto-pipeline
// has on their way (at most maxBatches before it queues), for tests that
// wait for it to be busy.
func RoundTripsInFlight(s *Store) int {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	return s.batch.running
}
