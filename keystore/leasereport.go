package keystore

import (
	"context"
	"time"
)

type leaseReportKey struct{}

// ContextWithLeaseReport returns a copy of ctx that carries report, for an
// Extend: a store that supports it calls report (through [ReportLease])
// with the lease that remained, by the store's own clock, when the Extend
// found the key held, before renewing it.
//
// The middleware compares it with its own reckoning of the lease (on its
// monotonic clock) to detect a step of the store's clock: leases expire by
// the store's wall clock (Redis key expiry, PostgreSQL clock_timestamp()),
// so a clock stepped forward on the store host ends leases early, and a
// request that takes the key over may then run alongside its holder.
// Store hosts must slew their clocks, not step them (as Redis and
// PostgreSQL themselves assume); this detects, after the fact, a step that
// happened anyway.
func ContextWithLeaseReport(ctx context.Context, report func(remaining time.Duration)) context.Context {
	return context.WithValue(ctx, leaseReportKey{}, report)
}

// ReportLease hands remaining, the lease left on a key when an Extend
// found it held, to the report function ctx carries, if any. Stores call
// it from Extend; memstore, redisstore and pgstore do.
func ReportLease(ctx context.Context, remaining time.Duration) {
	if report, ok := ctx.Value(leaseReportKey{}).(func(time.Duration)); ok && report != nil {
		report(remaining)
	}
}
