package main

import (
	"context"
	"net/url"
	"time"

	"github.com/geoidem/geoidem/examples/internal/faultproxy"
)

// startProxy puts the seeded fault proxy in front of the receiver at
// rcvURL and returns it with the URL senders use: lost acknowledgements,
// injected 503 and 429, resets, and requests held past the senders'
// attempt timeout.
func startProxy(rcvURL string, seed uint64) (*faultproxy.Proxy, string, error) {
	target, err := url.Parse(rcvURL)
	if err != nil {
		return nil, "", err
	}
	proxy, err := faultproxy.New(target, faultproxy.Config{
		Seed:      seed,
		LostAck:   0.10,
		Inject503: 0.05,
		Inject429: 0.05,
		Reset:     0.05,
		Delay:     0.05,
		DelayFor:  delayFor, // past the senders' attempt timeout
	})
	if err != nil {
		return nil, "", err
	}
	proxyURL, err := proxy.Start()
	if err != nil {
		proxy.Close()
		return nil, "", err
	}
	return proxy, proxyURL, nil
}

// drainProxy stops the proxy's faults and lets every request it holds land
// at the receiver before anything is looked at, then returns what it did.
func drainProxy(ctx context.Context, proxy *faultproxy.Proxy) (faultproxy.Stats, error) {
	proxy.Pause()
	sctx, cancel := context.WithTimeout(ctx, delayFor+30*time.Second)
	defer cancel()
	if err := proxy.Shutdown(sctx); err != nil {
		return faultproxy.Stats{}, err
	}
	return proxy.Stats(), nil
}
