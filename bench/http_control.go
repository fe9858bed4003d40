package main

import (
	"slices"
	"time"

	"github.com/geoidem/geoidem/keystore/memstore"
)

// Section 1's A/A control, the order of its measurements within a round,
// and its request bounds. The A/A control is the bare handler measured a
// second time, in a slot of the memory store's rotation, and set against
// the bare handler as memstore is: its ratios, which would be 1 on a quiet
// machine, are the noise floor of memstore's.

// aaName is the A/A control's row: the bare handler measured a second time.
const aaName = "bare (again)"

// An httpStep is one measurement of a round: a handler ("bare" for the bare
// handler, whose mode is "") in a mode.
type httpStep struct{ name, mode string }

// memGroup is the memory store's group of a round, in its cyclic order:
// the bare handler and its A/A control each between memstore's two modes,
// so that the control meets the bare handler as memstore does.
var memGroup = []httpStep{{"bare", ""}, {"memstore", "first call"}, {aaName, ""}, {"memstore", "replay"}}

// roundOrder is the order of a round's measurements. Every ratio's two
// sides are measured close together, so that they meet the same moments
// of a shared machine: first the memory store's group (memGroup), rotated
// by one slot each round, so that every 4 rounds each of its slots takes
// each of its 4 positions once; then each store next to its by-hand
// baseline in the same mode, the pair reversed in odd rounds.
func roundOrder(round int) []httpStep {
	k := round % len(memGroup)
	steps := slices.Concat(memGroup[k:], memGroup[:k])
	for _, pair := range [][2]string{{"redisstore", "Redis by hand"}, {"pgstore", "PostgreSQL by hand"}} {
		for _, mode := range []string{"first call", "replay"} {
			a, b := httpStep{pair[0], mode}, httpStep{pair[1], mode}
			if round%2 == 1 {
				a, b = b, a
			}
			steps = append(steps, a, b)
		}
	}
	return steps
}

// isBare reports whether the step named name measures the bare handler:
// its own row or the A/A control's.
func isBare(name string) bool { return name == "bare" || name == aaName }

// requestsAt is section 1's request bound at conc clients, over all
// rounds: more at many clients, so that a round's p99 there spans many
// batches of concurrent requests rather than less than one.
func (o *options) requestsAt(conc int) int {
	if conc > 1 {
		return o.httpManyRequests
	}
	return o.httpRequests
}

// perRound is the request bound of one measurement at conc clients.
func (o *options) perRound(conc int) int {
	return max(1, o.requestsAt(conc)/max(1, o.httpRounds))
}

// stepTime is the time bound of one measurement: the round's share
// perTime, which stops the stores' slower measurements, and twice that for
// memstore's group, which its request bound stops on a quiet machine, so
// that under load its p99 still spans many batches.
func stepTime(st httpStep, perTime time.Duration) time.Duration {
	if slices.Contains(memGroup, st) {
		return 2 * perTime
	}
	return perTime
}

// httpStoreKeys is the number of keys section 1 makes in a store with
// options o: every first call of every round at every client count, with
// its warm-up of warmUp requests a client, and each client count's replayed
// key.
func httpStoreKeys(o *options) int {
	n := 0
	for _, conc := range o.clients {
		n += 1 + max(1, o.httpRounds)*(o.perRound(conc)+warmUp*conc)
	}
	return n
}

// httpMemstoreConfig is the Config of section 1's memory store: the
// default (100,000 keys) would be too small for a full run, so it holds
// twice the keys the run makes, as a receiver sized for its traffic is,
// and stays under three quarters full, where its client bound would start
// to count.
func httpMemstoreConfig(o *options) memstore.Config {
	return memstore.Config{MaxEntries: 2 * httpStoreKeys(o)}
}
