package main

import "sync"

// acks is the set of keys whose delivery a sender saw acknowledged (a 2xx
// answer, executed or replayed): the receiver promised their effect.
type acks struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (a *acks) add(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.keys == nil {
		a.keys = map[string]bool{}
	}
	a.keys[key] = true
}

func (a *acks) has(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.keys[key]
}

func (a *acks) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.keys)
}
