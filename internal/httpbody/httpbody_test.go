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
