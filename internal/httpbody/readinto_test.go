package httpbody

import (
	"io"
	"strings"
	"testing"
)

// asked is a body that records the most any Read asked of it.
type asked struct {
	r   io.Reader
	max int
}

func (a *asked) Read(p []byte) (int, error) {
	a.max = max(a.max, len(p))
	return a.r.Read(p)
}

// TestReadInto checks that a body read into a buffer with room for it is
// read there, without allocating, with the same answers as Read, and that
// a buffer larger than the body never makes it ask the body for more than
// its limit: the declared length, or the byte past max.
func TestReadInto(t *testing.T) {
	const max = 100
	buf := make([]byte, 0, 1024)
	for _, c := range []struct {
		name     string
		body     string
		declared int64
		wantErr  error
		limit    int
	}{
		{name: "declared", body: "abc", declared: 3, limit: 3},
		{name: "undeclared", body: "abc", declared: -1, limit: max + 1},
		{name: "exactly max", body: strings.Repeat("x", max), declared: -1, limit: max + 1},
		{name: "one past max, undeclared", body: strings.Repeat("x", max+50), declared: -1, wantErr: ErrTooLarge, limit: max + 1},
		{name: "shorter than declared", body: "abc", declared: 10, wantErr: io.ErrUnexpectedEOF, limit: 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := &asked{r: strings.NewReader(c.body)}
			got, err := ReadInto(buf, request(body, c.declared), max)
			if err != c.wantErr {
				t.Fatalf("error %v, want %v", err, c.wantErr)
			}
			if body.max > c.limit {
				t.Errorf("a Read asked for %d bytes, more than the limit %d", body.max, c.limit)
			}
			if err != nil {
				return
			}
			if string(got) != c.body {
				t.Errorf("read %q, want %q", got, c.body)
			}
			if len(got) > 0 && &got[0] != &buf[:1][0] {
				t.Error("the body was not read into the buffer")
			}
		})
	}
	allocs := testing.AllocsPerRun(100, func() {
		r := request(strings.NewReader("abc"), 3)
		if _, err := ReadInto(buf, r, max); err != nil {
			t.Fatal(err)
		}
	})
	// The request and its reader, built in the loop, are 2 of them.
	readOnly := testing.AllocsPerRun(100, func() { _ = request(strings.NewReader("abc"), 3) })
	if allocs > readOnly {
		t.Errorf("ReadInto allocated %v times beside the request's %v, want none", allocs-readOnly, readOnly)
	}
}

// TestReadIntoGrows checks that a body larger than the buffer is read in
// full all the same.
func TestReadIntoGrows(t *testing.T) {
	want := strings.Repeat("abcdefgh", 1000)
	for _, declared := range []int64{int64(len(want)), -1} {
		got, err := ReadInto(make([]byte, 0, 16<<10), request(strings.NewReader(want), declared), 1<<20)
		if err != nil || string(got) != want {
			t.Errorf("declared %d: read %d bytes, error %v; want %d", declared, len(got), err, len(want))
		}
		got, err = ReadInto(make([]byte, 0, 64), request(strings.NewReader(want), declared), 1<<20)
		if err != nil || string(got) != want {
			t.Errorf("declared %d, small buffer: read %d bytes, error %v; want %d", declared, len(got), err, len(want))
		}
	}
}
