package client_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
)

// BenchmarkJournalCost measures deliveries per second to a bare receiver
// on loopback, straight through a Sender ("bare") and through an Outbox
// whose FileJournal syncs every record while the first attempt runs
// ("journal"), one delivery at a time ("serial") and 16 at once
// ("parallel", where concurrent records share their syncs). Compare the
// deliveries/s of one run.
//
// The disk's own rate is measured in the same seconds: after each serial
// journaled delivery, with the timer stopped, one line of a record's size
// is appended to a file in the same directory and synced with fsync, and
// one to another file with fdatasync, each timed. serial/journal reports
// those rates (fsyncs/s, fdatasyncs/s) and its deliveries/s divided by
// each (x-fsync, x-fdatasync). A serial delivery is a write, then a sync
// and a round trip at once, then a done mark, so x-fsync is at most about
// 1 (when the sync is the longer of the two). A bare delivery is timed
// after the raw syncs too, and x-fsync+bare is the time of one raw fsync
// and that bare delivery divided by the time of one journaled delivery:
// about 1 when the journal costs its sync and nothing else, and above 1
// when the round trip hides in the sync. (A round trip right after a sync is slower than
// one in a loop of round trips, as serial/bare times them: the threads
// slept through the sync, on this loopback alike for the journal's
// delivery and for the bare one.) x-overlap compares the journal with
// what its steps cost on this machine without it: after each journaled
// delivery, with the timer stopped, a record-sized line is written to a
// preallocated file in the same directory, its fdatasync handed to a
// goroutine (the caller yielding, as the journal does), a bare delivery
// made meanwhile, the sync waited for and a done-sized line written.
// x-overlap is those raw overlaps' time divided by the journaled
// deliveries' time: 1 when the journal costs nothing beyond its write,
// its sync overlapped with the attempt as well as the machine allows, and
// its done mark. Where a sync's latency grows with the CPU work running
// beside it (a small virtual machine), the raw overlap, and with it the
// journal, stays well above the longer of a sync and a delivery timed
// alone. records/sync is the journal's
// group commit: how many records one sync made durable, on average.
// serial/record is the journal alone, Record then Done with no delivery,
// against the same raw syncs: the journal at the disk's speed is 1 there.
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
	bare := func(ctx context.Context) error {
		_, err := s.Deliver(ctx, client.Delivery{URL: srv.URL, Key: fmt.Sprint("k", seq.Add(1)), Body: body})
		return err
	}
	var j *client.FileJournal
	deliverer := func(b *testing.B, journal bool) func(ctx context.Context) error {
		if !journal {
			return bare
		}
		var err error
		j, err = client.OpenFileJournal(filepath.Join(b.TempDir(), "journal"), client.FileJournalConfig{})
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
	// The size of one record line.
	probe := filepath.Join(b.TempDir(), "probe")
	pj, err := client.OpenFileJournal(probe, client.FileJournalConfig{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pj.Record(context.Background(), client.JournalEntry{Delivery: client.Delivery{URL: srv.URL, Key: "k1000000", Body: body}}); err != nil {
		b.Fatal(err)
	}
	pj.Close()
	line, err := os.ReadFile(probe)
	if err != nil {
		b.Fatal(err)
	}
	line = bytes.TrimRight(line, "\x00")
	// raw appends line to a file in the same directory and syncs it, with
	// fsync or fdatasync, and returns how long that took.
	rawFile := func(b *testing.B, datasync bool) func() time.Duration {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		sync := f.Sync
		if datasync {
			sync = func() error { return client.Datasync(f) }
		}
		return func() time.Duration {
			start := time.Now()
			if _, err := f.Write(line); err != nil {
				b.Fatal(err)
			}
			if err := sync(); err != nil {
				b.Fatal(err)
			}
			return time.Since(start)
		}
	}
	// rawOverlap returns an op that does a journaled delivery's steps
	// with no journal (see x-overlap above) and returns how long it took.
	rawOverlap := func(b *testing.B) func() time.Duration {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "overlap"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		_ = client.Fallocate(f, 0, 64<<20) // else plain appends
		done := line[:len(line)/2]
		return func() time.Duration {
			start := time.Now()
			if _, err := f.Write(line); err != nil {
				b.Fatal(err)
			}
			synced := make(chan error, 1)
			go func() { synced <- client.Datasync(f) }()
			runtime.Gosched()
			if err := bare(context.Background()); err != nil {
				b.Fatal(err)
			}
			if err := <-synced; err != nil {
				b.Fatal(err)
			}
			if _, err := f.Write(done); err != nil {
				b.Fatal(err)
			}
			return time.Since(start)
		}
	}
	// The journal alone: Record and Done, one after another, with a raw
	// fsync and a raw fdatasync timed after each (timer stopped).
	b.Run("serial/record", func(b *testing.B) {
		j, err := client.OpenFileJournal(filepath.Join(b.TempDir(), "journal"), client.FileJournalConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer j.Close()
		fsync, fdatasync := rawFile(b, false), rawFile(b, true)
		var fsyncTime, fdatasyncTime time.Duration
		ctx := context.Background()
		for b.Loop() {
			e, err := j.Record(ctx, client.JournalEntry{Delivery: client.Delivery{URL: srv.URL, Key: fmt.Sprint("k", seq.Add(1)), Body: body}})
			if err != nil {
				b.Fatal(err)
			}
			if err := j.Done(ctx, e, client.OutcomeDelivered); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			fsyncTime += fsync()
			fdatasyncTime += fdatasync()
			b.StartTimer()
		}
		rate := float64(b.N) / b.Elapsed().Seconds()
		b.ReportMetric(rate, "records/s")
		b.ReportMetric(rate/(float64(b.N)/fsyncTime.Seconds()), "x-fsync")
		b.ReportMetric(rate/(float64(b.N)/fdatasyncTime.Seconds()), "x-fdatasync")
	})
	for _, mode := range []string{"serial", "parallel"} {
		for _, journal := range []bool{false, true} {
			name := mode + "/bare"
			if journal {
				name = mode + "/journal"
			}
			b.Run(name, func(b *testing.B) {
				deliver := deliverer(b, journal)
				ctx := context.Background()
				var fsync, fdatasync, overlap func() time.Duration
				var fsyncTime, fdatasyncTime, bareTime, overlapTime time.Duration
				if mode == "serial" && journal {
					fsync, fdatasync, overlap = rawFile(b, false), rawFile(b, true), rawOverlap(b)
				}
				if mode == "serial" {
					for b.Loop() {
						if err := deliver(ctx); err != nil {
							b.Fatal(err)
						}
						if fsync != nil { // the disk, in the same seconds
							b.StopTimer()
							fsyncTime += fsync()
							fdatasyncTime += fdatasync()
							start := time.Now()
							if err := bare(ctx); err != nil {
								b.Fatal(err)
							}
							bareTime += time.Since(start)
							overlapTime += overlap()
							b.StartTimer()
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
				rate := float64(b.N) / b.Elapsed().Seconds()
				b.ReportMetric(rate, "deliveries/s")
				if fsync != nil {
					rawFsync := float64(b.N) / fsyncTime.Seconds()
					rawFdatasync := float64(b.N) / fdatasyncTime.Seconds()
					b.ReportMetric(rawFsync, "fsyncs/s")
					b.ReportMetric(rawFdatasync, "fdatasyncs/s")
					b.ReportMetric(rate/rawFsync, "x-fsync")
					b.ReportMetric(rate/rawFdatasync, "x-fdatasync")
					b.ReportMetric(float64(b.N)/(fsyncTime+bareTime).Seconds()/rate, "x-fsync+bare")
					b.ReportMetric(overlapTime.Seconds()/b.Elapsed().Seconds(), "x-overlap")
				}
				if journal {
					b.ReportMetric(float64(b.N)/float64(j.Syncs()), "records/sync")
				}
			})
		}
	}
}
