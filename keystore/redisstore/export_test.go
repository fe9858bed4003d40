package redisstore

// RoundTripsInFlight returns how many commands or batches s's auto-pipeline
// has on their way (at most maxBatches before it queues), for tests that
// wait for it to be busy.
func RoundTripsInFlight(s *Store) int {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	return s.batch.running
}

// Persistence returns the persistence that New read from Redis, in the
// server's own configuration words (for example "appendonly yes,
// appendfsync always" or `appendonly no, save "3600 1"`); for a Cluster
// or Ring, that of the weakest node, prefixed by its address. It is "" when
// New did not read it (AcceptVolatile, or Redis unreachable).
func Persistence(s *Store) string { return s.persistence }

// MaxmemoryPolicy returns the maxmemory-policy that New read from Redis
// (for a Cluster, the first evicting policy among its nodes, else
// "noeviction"), or "" when it was not read.
func MaxmemoryPolicy(s *Store) string { return s.policy }
