package adminhttp_test

import (
	"testing"
	"time"

	"github.com/geoidem/geoidem/keystore"
	"github.com/geoidem/geoidem/keystore/adminhttp"
)

func TestSummaryAdd(t *testing.T) {
	var s adminhttp.Summary
	s.Add("a", adminhttp.Entry{State: keystore.Completed, RetentionRemaining: time.Hour}, 100)
	s.Add("b", adminhttp.Entry{State: keystore.InFlight, LeaseRemaining: -time.Second, LeaseRunOut: true}, 10)
	s.Add("c", adminhttp.Entry{State: keystore.InFlight, LeaseRemaining: time.Minute}, 20)
	s.Add("d", adminhttp.Entry{State: keystore.Released}, 5)
	want := adminhttp.Summary{InFlight: 2, LeaseRunOut: 1, Completed: 1, Bytes: 130,
		Oldest: "b", OldestState: keystore.InFlight, OldestRemaining: -time.Second}
	if s != want {
		t.Errorf("Summary = %+v, want %+v", s, want)
	}
	var one adminhttp.Summary
	one.Add("x", adminhttp.Entry{State: keystore.Completed, RetentionRemaining: 2 * time.Hour}, 1)
	if one.Oldest != "x" || one.OldestRemaining != 2*time.Hour {
		t.Errorf("one entry: %+v, want it the oldest", one)
	}
}
