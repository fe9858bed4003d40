package client_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/geoidem/geoidem/client"
)

// writeSizes is a journal file that records the size of each Write to
// the compacted file it stands for.
type writeSizes struct {
	*os.File
	mu      *sync.Mutex
	largest *int
}

func (w writeSizes) Write(p []byte) (int, error) {
	w.mu.Lock()
	*w.largest = max(*w.largest, len(p))
	w.mu.Unlock()
	return w.File.Write(p)
}

// A compaction writes the entries it keeps as it encodes them, through a
// buffer of a bounded size, rather than building the whole compacted
// file in memory first: a journal that remembers a day of deliveries
// would otherwise hold a second copy of all of them, under its lock, at
// every compaction. The file it writes holds every remembered entry.
func TestCompactionWritesInBoundedChunks(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	var mu sync.Mutex
	largest := 0
	wrap := func(f *os.File) client.JournalFile {
		if strings.HasSuffix(f.Name(), ".compact") {
			return writeSizes{File: f, mu: &mu, largest: &largest}
		}
		return f
	}
	j, err := client.OpenFileJournalWrapped(path, client.WithCompactAt(client.FileJournalConfig{}, 1024), wrap)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	body := fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", 900))
	const n = 3000 // about 3 MB of entries, all remembered (24 h retention)
	for i := range n {
		e, err := j.Record(ctx, entry(fmt.Sprint("k", i), body))
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Done(ctx, e, client.OutcomeDelivered); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	got := largest
	mu.Unlock()
	if got == 0 {
		t.Fatal("no compaction ran")
	}
	if got > client.CompactChunk {
		t.Errorf("a compaction wrote %d bytes at once; want at most %d", got, client.CompactChunk)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, err = client.OpenFileJournal(path, client.FileJournalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for i := range n {
		e, err := j.Record(ctx, entry(fmt.Sprint("k", i), `{"other":1}`))
		if err != nil {
			t.Fatal(err)
		}
		if string(e.Body) != body {
			t.Fatalf("entry %d after compaction and reopen: body %.40q…, want the first recorded", i, e.Body)
		}
	}
}
