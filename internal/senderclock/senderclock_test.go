package senderclock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/senderclock"
)

// TestSystem: Sleep ends with its context, a zero Sleep returns at once,
// and Now is time.Now.
func TestSystem(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var c senderclock.System
	if err := c.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(canceled, 1h) = %v", err)
	}
	if err := c.Sleep(context.Background(), 0); err != nil {
		t.Errorf("Sleep(0) = %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Sleep(ctx2, time.Hour) }()
	cancel2()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep canceled while waiting = %v", err)
	}
	if d := time.Since(c.Now()); d < 0 || d > time.Minute {
		t.Errorf("System.Now is %v away from time.Now", d)
	}
}
