package client_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/geoidem/geoidem/client"
)

// BenchmarkJournalCost measures deliveries per second to a bare receiver
// on loopback, straight through a Sender ("bare") and through an Outbox
// whose FileJournal syncs every record before the first attempt
// ("journal"), one delivery at a time ("serial") and 16 at once
// ("parallel", where concurrent records share their syncs). Compare the
// deliveries/s of one run.
func BenchmarkJournalCost(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	s, err := client.New(&http.Client{Transport: tr}, client.Config{})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"type":"Feature","id":"f","geometry":{"type":"Point","coordinates":[1.5,2.25]},"properties":{"observation_time":"2026-03-01T12:00:00Z"}}`)
	var seq atomic.Int64
	deliverer := func(b *testing.B, journal bool) func(ctx context.Context) error {
		if !journal {
			return func(ctx context.Context) error {
				_, err := s.Deliver(ctx, client.Delivery{URL: srv.URL, Key: fmt.Sprint("k", seq.Add(1)), Body: body})
				return err
			}
		}
		j, err := client.OpenFileJournal(filepath.Join(b.TempDir(), "journal"), client.FileJournalConfig{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { j.Close() })
		ob := client.NewOutbox(s, j)
		return func(ctx context.Context) error {
			_, err := ob.Deliver(ctx, client.Delivery{URL: srv.URL, Key: fmt.Sprint("k", seq.Add(1)), Body: body})
			return err
		}
	}
	for _, mode := range []string{"serial", "parallel"} {
		for _, journal := range []bool{false, true} {
			name := mode + "/bare"
			if journal {
				name = mode + "/journal"
			}
			b.Run(name, func(b *testing.B) {
				deliver := deliverer(b, journal)
				ctx := context.Background()
				if mode == "serial" {
					for b.Loop() {
						if err := deliver(ctx); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					b.SetParallelism(8)
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := deliver(ctx); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
			})
		}
	}
}
