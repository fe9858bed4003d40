package client

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// journalLine is one line of the file.
type journalLine struct {
	Op          string          `json:"op"` // "record" or "done"
	Method      string          `json:"method"`
	URL         string          `json:"url"`
	Key         string          `json:"key"`
	ContentType string          `json:"content_type,omitempty"`
	Header      http.Header     `json:"header,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
	BodyBase64  []byte          `json:"body_base64,omitempty"`
	Empty       bool            `json:"empty,omitempty"` // a record whose body is empty
	Time        time.Time       `json:"time"`            // recorded, or done
	Outcome     string          `json:"outcome,omitempty"`
	Ended       time.Time       `json:"ended,omitzero"` // a compacted record of a done entry

	compact bool // Body is compact JSON, written as it is (see appendLine)
}

// load reads every line of f, truncating a torn last one, and returns the
// offset where the next line goes.
//
// The journal ends at the first line holding a zero byte, which no line
// written by the journal holds (JSON escapes it): the room reserved past
// the last line reads as zeros, and a crash while a batch was written but
// not yet synced can leave its pages, and the lines written after it,
// partly on disk around holes of zeros. None of that had been synced (a
// sync makes every page before it durable), so no Record that returned
// is lost by dropping it.
func (j *FileJournal) load(f *os.File) (int64, error) {
	r := bufio.NewReaderSize(f, 64<<10)
	var off int64
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return 0, err
		}
		if len(line) == 0 {
			return off, nil
		}
		complete := line[len(line)-1] == '\n'
		zero := bytes.IndexByte(line, 0) >= 0
		perr := errors.New("incomplete line")
		if complete && !zero {
			perr = j.apply(line)
		}
		if perr != nil {
			if _, err := r.Peek(1); err != io.EOF && !zero { // not the last line
				return 0, fmt.Errorf("line %d: %w", n, perr)
			}
			// A torn last line, or the end of what was synced: no
			// Record of what follows returned.
			if err := f.Truncate(off); err != nil {
				return 0, err
			}
			return off, f.Sync()
		}
		off += int64(len(line))
		j.lines++
	}
}

// apply replays one line onto the entries.
func (j *FileJournal) apply(line []byte) error {
	var l journalLine
	if err := json.Unmarshal(line, &l); err != nil {
		return err
	}
	e := JournalEntry{Delivery: Delivery{Method: l.Method, URL: l.URL, Key: l.Key}}
	id := e.identity()
	switch l.Op {
	case "record":
		if _, ok := j.entries[id]; ok {
			return nil // the first record wins
		}
		e.ContentType, e.Header, e.Recorded = l.ContentType, l.Header, l.Time
		e.Outcome, e.Ended = l.Outcome, l.Ended
		switch {
		case l.Body != nil:
			e.Body = []byte(l.Body)
		case l.BodyBase64 != nil:
			e.Body = l.BodyBase64
		case l.Empty:
			e.Body = []byte{}
		default:
			return errors.New("a record without a body")
		}
		s := &journalSlot{e: e}
		j.entries[id] = s
		j.order = append(j.order, s)
	case "done":
		if s, ok := j.entries[id]; ok {
			s.e.Outcome, s.e.Ended = l.Outcome, l.Time
		}
	default:
		return fmt.Errorf("unknown op %q", l.Op)
	}
	return nil
}

// recordLine is the line that records e (with its outcome, if it is done).
func recordLine(e JournalEntry) ([]byte, error) {
	l := journalLine{
		Op: "record", Method: e.Method, URL: e.URL, Key: e.Key, ContentType: e.ContentType,
		Header: e.Header, Time: e.Recorded, Outcome: e.Outcome, Ended: e.Ended,
	}
	switch {
	case len(e.Body) == 0:
		l.Empty = true
	case embeddable(e.Body):
		l.Body, l.compact = e.Body, true
	default:
		l.BodyBase64 = e.Body
	}
	return marshalLine(l)
}

// marshalLine returns l as one JSON line, ending with '\n'.
func marshalLine(l journalLine) ([]byte, error) {
	if line, ok := appendLine(make([]byte, 0, lineSize(&l)), &l); ok {
		return line, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // ends the line with '\n'
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l); err != nil {
		return nil, fmt.Errorf("client: journal: %w", err)
	}
	return buf.Bytes(), nil
}
