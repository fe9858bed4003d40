// Package ratelog logs refusals at a bounded rate: a flood of refused
// requests must not become a flood of log lines (48,700 unsigned webhooks
// once wrote 15 MB of WARN records). The records past the bound are
// counted, and the next record written carries the count.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Defaults for New's zero arguments.
const (
	DefaultBurst    = 10
	DefaultInterval = time.Minute
)

// Logger writes at most burst records per interval through an
// *slog.Logger; the others are counted and not written, and the next record
// written carries their number as the attribute "suppressed". It is safe
// for concurrent use.
type Logger struct {
	log      *slog.Logger
	burst    int
	interval time.Duration
	now      func() time.Time

	mu         sync.Mutex
	windowEnd  time.Time
	written    int
	suppressed int64
}

// New returns a Logger writing to log (nil: nothing) at most burst records
// per interval; zero or negative arguments mean DefaultBurst and
// DefaultInterval.
func New(log *slog.Logger, burst int, interval time.Duration) *Logger {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if burst <= 0 {
		burst = DefaultBurst
	}
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Logger{log: log, burst: burst, interval: interval, now: time.Now}
}

// Warn logs a warning, within the bound.
func (l *Logger) Warn(ctx context.Context, msg string, attrs ...slog.Attr) {
	l.LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
}

// LogAttrs logs a record at level, within the bound: past burst records in
// the current interval it only counts it. A record below the handler's
// level is neither written nor counted.
func (l *Logger) LogAttrs(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	if !l.log.Enabled(ctx, level) {
		return
	}
	l.mu.Lock()
	now := l.now()
	if !now.Before(l.windowEnd) {
		l.windowEnd, l.written = now.Add(l.interval), 0
	}
	if l.written >= l.burst {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	l.written++
	n := l.suppressed
	l.suppressed = 0
	l.mu.Unlock()
	if n > 0 {
		attrs = append(attrs, slog.Int64("suppressed", n))
	}
	l.log.LogAttrs(ctx, level, msg, attrs...)
}
