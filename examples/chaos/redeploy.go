package main

import (
	"context"
	"strings"
)

// redeployable is a receiver that runs examples/ingest's service, which
// answers GET /features/{id}, and can be redeployed: stopped gracefully
// (its requests drain) and started again on the same store and port.
type redeployable interface {
	receiver
	// redeploy stops the receiver gracefully and starts it again. It
	// reports false, and leaves the receiver running, on the memory store,
	// which keeps nothing across a restart of its process by design.
	redeploy(ctx context.Context) (bool, error)
}

// redeploy shuts the service down as SIGTERM does in -serve-receiver mode
// (the server takes no new connection, the requests in progress finish,
// the stores close) and starts it again with the same configuration and
// run counter, on the same port.
func (r *inProcess) redeploy(ctx context.Context) (bool, error) {
	if r.kind == memoryStore {
		return false, nil
	}
	addr := strings.TrimPrefix(r.url, "http://")
	r.Close()
	return true, r.start(ctx, addr)
}

// redeploy stops the child with SIGTERM and starts it again on its port,
// once it answers GET /healthz.
func (c *child) redeploy(ctx context.Context) (bool, error) {
	if err := c.terminate(); err != nil {
		return false, err
	}
	if err := c.start(ctx); err != nil {
		return false, err
	}
	return true, healthy(ctx, c.URL())
}
