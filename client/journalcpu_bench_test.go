package client_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/geoidem/geoidem/client"
)

// nullFile is a journal file that keeps nothing and syncs at once.
type nullFile struct{}

func (nullFile) Write(p []byte) (int, error) { return len(p), nil }
func (nullFile) Sync() error                 { return nil }
func (nullFile) Close() error                { return nil }

// answer201 is a transport that answers every request 201 at once.
type answer201 struct{}

func (answer201) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusCreated, Body: http.NoBody, Header: http.Header{}, Request: r, ProtoMajor: 1, ProtoMinor: 1}, nil
}

// BenchmarkJournalCPU is the sender's own work per delivery, with neither
// a disk nor a network to wait for: bare, Sender.Deliver over a transport
// that answers 201 at once; journal, the same through an Outbox over a
// FileJournal whose file keeps nothing and syncs at once. The journal's
// in-memory entries and its compactions are real: every delivery is
// remembered for the default retention, so b.N deliveries grow the
// journal as a day of them would.
func BenchmarkJournalCPU(b *testing.B) {
	s, err := client.New(&http.Client{Transport: answer201{}}, client.Config{})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"type":"Feature","id":"f","geometry":{"type":"Point","coordinates":[1.5,2.25]},"properties":{"observation_time":"2026-03-01T12:00:00Z"}}`)
	run := func(b *testing.B, deliver func(context.Context, client.Delivery) (client.Result, error)) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if _, err := deliver(context.Background(), client.Delivery{URL: "http://127.0.0.1:1/events", Key: "k" + strconv.Itoa(i), Body: body}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("bare", func(b *testing.B) { run(b, s.Deliver) })
	b.Run("journal", func(b *testing.B) {
		j, err := client.OpenFileJournalWrapped(filepath.Join(b.TempDir(), "journal"), client.FileJournalConfig{},
			func(*os.File) client.JournalFile { return nullFile{} })
		if err != nil {
			b.Fatal(err)
		}
		defer j.Close()
		run(b, client.NewOutbox(s, j).Deliver)
	})
}
