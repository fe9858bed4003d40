package httpbody

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

func request(body io.Reader, declared int64) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", body)
	r.ContentLength = declared
	return r
}

func TestRead(t *testing.T) {
	const max = 100
	full := strings.Repeat("x", max)
	cases := []struct {
		name     string
		r        *http.Request
		want     string
		wantErr  error
		wantNil  bool
		anyError bool
	}{
		{name: "no body", r: httptest.NewRequest(http.MethodPost, "/", nil), wantNil: true},
		{name: "declared", r: request(strings.NewReader("abc"), 3), want: "abc"},
		{name: "undeclared", r: request(strings.NewReader("abc"), -1), want: "abc"},
		{name: "exactly max", r: request(strings.NewReader(full), -1), want: full},
		{name: "one past max, undeclared", r: request(strings.NewReader(full+"y"), -1), wantErr: ErrTooLarge},
		{name: "declared past max", r: request(strings.NewReader("abc"), max+1), wantErr: ErrTooLarge},
		{name: "shorter than declared", r: request(strings.NewReader("abc"), 10), wantErr: io.ErrUnexpectedEOF},
		{name: "read error", r: request(iotest.ErrReader(errors.New("boom")), -1), anyError: true},
		{name: "slow reader", r: request(iotest.OneByteReader(strings.NewReader(full)), -1), want: full},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Read(c.r, max)
			switch {
			case c.anyError:
				if err == nil || errors.Is(err, ErrTooLarge) {
					t.Fatalf("err = %v, want the reader's error", err)
				}
			case c.wantErr != nil:
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
			case err != nil:
				t.Fatalf("err = %v", err)
			case c.wantNil && got != nil:
				t.Fatalf("got %q, want nil", got)
			case string(got) != c.want:
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestReadMaxBytesReader: a server-wide http.MaxBytesReader that is
// tighter than the caller's limit reads as ErrTooLarge, not as a failure of
// the connection.
func TestReadMaxBytesReader(t *testing.T) {
	r := request(strings.NewReader(strings.Repeat("x", 50)), -1)
	r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, 10)
	if _, err := Read(r, 100); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

// TestReadMemoryFollowsBytesReceived: a client that declares far more than
// it sends costs no more than the first buffer.
func TestReadMemoryFollowsBytesReceived(t *testing.T) {
	var bytesPerRun uint64
	{
		r := request(bytes.NewReader([]byte("a")), 1<<20)
		var before, after runtimeMem
		before.read()
		_, _ = Read(r, 1<<20)
		after.read()
		bytesPerRun = after.total - before.total
	}
	if bytesPerRun > 2*firstBuffer {
		t.Errorf("a 1 MiB declaration with 1 byte sent allocated %d bytes, want at most %d", bytesPerRun, 2*firstBuffer)
	}
}

// A Buffered body not yet read is returned as it is, without a copy; one
// partly read is read as any body; one over the limit is too large.
func TestBuffered(t *testing.T) {
	b := []byte(`{"type":"Feature"}`)
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Body, r.ContentLength = NewBuffered(b), int64(len(b))
	got, err := Read(r, 1<<20)
	if err != nil || &got[0] != &b[0] || len(got) != len(b) {
		t.Errorf("Read of a Buffered body: %q, %v; want its own bytes, not a copy", got, err)
	}
	if n, _ := r.Body.Read(make([]byte, 1)); n != 0 {
		t.Error("a Buffered body taken by Read still has bytes to read")
	}
	r.Body, r.ContentLength = NewBuffered(b), -1
	_, _ = r.Body.Read(make([]byte, 2))
	if got, err := Read(r, 1<<20); err != nil || string(got) != string(b[2:]) {
		t.Errorf("Read of a Buffered body partly read: %q, %v; want the rest", got, err)
	}
	r.Body, r.ContentLength = NewBuffered(b), -1
	if _, err := Read(r, 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Read of a Buffered body over the limit: %v, want ErrTooLarge", err)
	}
}
