package ratelog

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A flood of refusals writes at most Burst records per Interval, and the
// next record says how many were not written.
func TestFloodIsBounded(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1_000_000, 0)
	l := New(slog.New(slog.NewTextHandler(&buf, nil)), 5, time.Minute)
	l.now = func() time.Time { return now }
	ctx := context.Background()
	for range 48_700 {
		l.Warn(ctx, "webhook rejected", slog.String("reason", "signature_missing"))
	}
	if n := strings.Count(buf.String(), "\n"); n != 5 {
		t.Fatalf("48,700 refusals in one interval wrote %d lines, want 5", n)
	}
	now = now.Add(time.Minute)
	buf.Reset()
	l.Warn(ctx, "webhook rejected", slog.String("reason", "signature_missing"))
	if !strings.Contains(buf.String(), "suppressed=48695") {
		t.Fatalf("the next record after the interval: %q, want suppressed=48695", buf.String())
	}
	buf.Reset()
	l.Warn(ctx, "webhook rejected")
	if strings.Contains(buf.String(), "suppressed") {
		t.Errorf("the count was reported twice: %q", buf.String())
	}
}

// Records below the handler's level are neither written nor counted.
func TestDisabledLevelNotCounted(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError})), 1, time.Minute)
	for range 10 {
		l.Warn(context.Background(), "x")
	}
	if buf.Len() != 0 || l.suppressed != 0 {
		t.Errorf("disabled records: %q, %d counted", buf.String(), l.suppressed)
	}
}

// A nil *slog.Logger logs nothing.
func TestNilLogger(t *testing.T) {
	New(nil, 1, time.Second).Warn(context.Background(), "x")
}
