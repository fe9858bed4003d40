package service

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/redisstore"
	"github.com/geoidem/geoidem/newest"
)

// redisFeatures keeps features in Redis, beside the keys: the feature store
// of the Redis modes, so that a feature acknowledged with 201 survives a
// restart of the service (and is seen by every replica) as its key's record
// does. A feature is a hash at prefix + "{features}:" + id: field obs, its
// observation (see encodeObservation), and two counters a harness reads,
// upserts (the runs whose write took this feature, stale or not) and
// writes (those that replaced it).
//
// Every feature key has the hash tag {features} (unless the prefix has a
// tag of its own, which then holds for them all): on a Redis Cluster they
// share one slot, so that the features of one request are written in one
// MULTI. An upsert WATCHes the request's feature keys, reads them, rules
// with newest.Decide, and writes in MULTI/EXEC what supersedes; a
// concurrent write of one of those ids fails the EXEC, and the upsert reads
// and rules again (at most maxWatchTries times, then a transient error).
// answer is called on each try, before its EXEC, so that a wrapper's pause
// in it falls between the ruling and the write.
//
// The write and the key's completion are two round trips: a process killed
// between them leaves the feature written and the key claimed, and the
// sender's retry, once the lease has run out, runs the handler again. The
// newest rule makes that repeat harmless to the state (the same observation
// is stale); PostgreSQL mode has no such window (one transaction).
//
// With waitReplicas set (the key store's WaitReplicas), each upsert then
// runs WAIT on the connection of its EXEC, and
// succeeds only once that many replicas acknowledged it within
// waitTimeout: the feature of an event answered 201 is then on a replica
// when a failover promotes it, as the key's claim is. Replication is one
// ordered stream, so the key's completion, written after the feature,
// never reaches a replica without it. A write that is not acknowledged in
// time fails as transient (503, the key released): its effect may still
// reach the replicas, and the retry then runs it again (harmless to the
// state for a feature that carries its observation_time).
type redisFeatures struct {
	client redis.UniversalClient
	prefix string

	waitReplicas int
	waitTimeout  time.Duration
}

// maxWatchTries bounds an upsert's optimistic retries under contention on
// the same ids.
const maxWatchTries = 50

// errContended is an upsert that lost maxWatchTries races: transient.
var errContended = errors.New("redis features: too many concurrent writes of the same ids")

// featureKey is the Redis key of the feature id.
func (s *redisFeatures) featureKey(id string) string { return s.prefix + "{features}:" + id }

// The hash fields of a feature.
const (
	fieldObservation = "obs"
	fieldUpserts     = "upserts"
	fieldWrites      = "writes"
)

func (s *redisFeatures) Upsert(ctx context.Context, _ *keystore.Hold, fs []Feature, answer func([]newest.Verdict) Answer) (Answer, error) {
	if len(fs) == 0 { // nothing to write (a FeatureCollection without features)
		return answer([]newest.Verdict{}), nil
	}
	keys := make([]string, 0, len(fs))
	index := make(map[string]int, len(fs)) // id: its place in keys
	for _, f := range fs {
		if _, ok := index[f.ID]; !ok {
			index[f.ID] = len(keys)
			keys = append(keys, s.featureKey(f.ID))
		}
	}
	var rec Answer
	for range maxWatchTries {
		err := s.client.Watch(ctx, func(tx *redis.Tx) error {
			latest := make([]newest.Observation, len(keys))
			for i, k := range keys {
				v, err := tx.HGet(ctx, k, fieldObservation).Bytes()
				switch {
				case errors.Is(err, redis.Nil):
				case err != nil:
					return err
				default:
					if latest[i], err = decodeObservation(v); err != nil {
						return fmt.Errorf("feature %s: %w", k, err)
					}
				}
			}
			verdicts := make([]newest.Verdict, len(fs))
			for i, f := range fs {
				j := index[f.ID]
				if verdicts[i] = newest.Decide(latest[j], f.Observation()); verdicts[i] == newest.Replace {
					latest[j] = f.Observation()
				}
			}
			rec = answer(verdicts)
			if _, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for i, f := range fs {
					k := keys[index[f.ID]]
					if verdicts[i] == newest.Replace {
						p.HSet(ctx, k, fieldObservation, encodeObservation(f.Observation()))
						p.HIncrBy(ctx, k, fieldWrites, 1)
					}
					p.HIncrBy(ctx, k, fieldUpserts, 1)
				}
				return nil
			}); err != nil || s.waitReplicas <= 0 {
				return err
			}
			return s.waitReplicated(ctx, tx)
		}, keys...)
		if errors.Is(err, redis.TxFailedErr) {
			continue // a concurrent write of one of the ids: read and rule again
		}
		if err != nil {
			return Answer{}, err
		}
		return rec, nil
	}
	return Answer{}, errContended
}

// waitReplicated runs WAIT on tx's connection, which counts the replicas
// that acknowledged that connection's writes: the EXEC just made.
func (s *redisFeatures) waitReplicated(ctx context.Context, tx *redis.Tx) error {
	n, err := tx.Wait(ctx, s.waitReplicas, s.waitTimeout).Result()
	if err != nil {
		return fmt.Errorf("redis features: wait for replicas: %w", err)
	}
	if n < int64(s.waitReplicas) {
		return fmt.Errorf("redis features: %w: %d of %d acknowledged the write within %v", redisstore.ErrNotReplicated, n, s.waitReplicas, s.waitTimeout)
	}
	return nil
}

func (s *redisFeatures) Get(ctx context.Context, id string) ([]byte, bool, error) {
	v, err := s.client.HGet(ctx, s.featureKey(id), fieldObservation).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	o, err := decodeObservation(v)
	if err != nil {
		return nil, false, fmt.Errorf("feature %q: %w", id, err)
	}
	return o.Bytes, true, nil
}

// encodeObservation is o as stored: a byte 1 and the time in Unix
// microseconds (newest.Precision), big-endian, or a byte 0 for no time;
// then the feature's bytes.
func encodeObservation(o newest.Observation) []byte {
	if o.Time.IsZero() {
		return append([]byte{0}, o.Bytes...)
	}
	b := make([]byte, 9, 9+len(o.Bytes))
	b[0] = 1
	binary.BigEndian.PutUint64(b[1:], uint64(o.Time.UnixMicro()))
	return append(b, o.Bytes...)
}

// decodeObservation reverses encodeObservation.
func decodeObservation(b []byte) (newest.Observation, error) {
	switch {
	case len(b) >= 1 && b[0] == 0:
		return newest.Observation{Bytes: b[1:]}, nil
	case len(b) >= 9 && b[0] == 1:
		t := time.UnixMicro(int64(binary.BigEndian.Uint64(b[1:9]))).UTC()
		return newest.Observation{Time: t, Bytes: b[9:]}, nil
	}
	return newest.Observation{}, errors.New("not a stored observation")
}
