package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"

	"github.com/geoidem/geoidem/client"
)

// deadLetterID is what makes two dead letters the same delivery: the
// identity the journal uses.
type deadLetterID struct{ method, url, key string }

func idOf(method, url, key string) deadLetterID {
	if method == "" {
		method = http.MethodPost
	}
	return deadLetterID{method, url, key}
}

// deadLetterFile is the -dead-letter file. It appends no dead letter the
// file already holds for the same method, URL and key (an earlier run's,
// or an earlier one of this run): a re-run whose failure is already there
// leaves the file as it is, and a re-drive of it sends each delivery once.
type deadLetterFile struct {
	sink *client.JSONLinesSink

	mu      sync.Mutex
	held    map[deadLetterID]bool
	written int // dead letters appended
	already int // dead letters the file held already, not appended
}

// openDeadLetterFile opens the file at path for appending, after reading
// which deliveries it already holds. A line that does not parse (a torn
// last line) holds none.
func openDeadLetterFile(path string) (*deadLetterFile, error) {
	held := map[deadLetterID]bool{}
	f, err := os.Open(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("dead-letter file: %w", err)
	default:
		br := bufio.NewReader(f)
		for {
			line, rerr := br.ReadBytes('\n')
			var dl struct{ Method, URL, Key string }
			if json.Unmarshal(line, &dl) == nil && dl.URL != "" && dl.Key != "" {
				held[idOf(dl.Method, dl.URL, dl.Key)] = true
			}
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				f.Close()
				return nil, fmt.Errorf("dead-letter file: %w", rerr)
			}
		}
		f.Close()
	}
	sink, err := client.OpenJSONLinesFile(path)
	if err != nil {
		return nil, err
	}
	return &deadLetterFile{sink: sink, held: held}, nil
}

// Put appends dl, unless the file holds that delivery already.
func (d *deadLetterFile) Put(ctx context.Context, dl client.DeadLetter) error {
	id := idOf(dl.Method, dl.URL, dl.Key)
	d.mu.Lock()
	defer d.mu.Unlock() // the sink writes one line at a time anyway
	if d.held[id] {
		d.already++
		return nil
	}
	if err := d.sink.Put(ctx, dl); err != nil {
		return err
	}
	d.held[id] = true
	d.written++
	return nil
}

// counts returns how many dead letters were appended, and how many the
// file held already.
func (d *deadLetterFile) counts() (written, already int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.written, d.already
}

// Close closes the file.
func (d *deadLetterFile) Close() error { return d.sink.Close() }
