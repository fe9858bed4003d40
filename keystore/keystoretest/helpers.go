package keystoretest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/geoidem/geoidem/internal/record"
	"github.com/geoidem/geoidem/keystore"
)

// Durations used by the time-based rules. shortLease and shortRetention must
// be long enough for one store round trip on a loaded machine to finish well
// inside them, and waitFor must comfortably exceed them.
const (
	longLease      = time.Minute
	longRetention  = time.Hour
	shortLease     = 300 * time.Millisecond
	shortRetention = 300 * time.Millisecond
	waitFor        = 10 * time.Second
	pollEvery      = 20 * time.Millisecond
)

func fingerprint(s string) keystore.Fingerprint {
	var fp keystore.Fingerprint
	copy(fp[:], s)
	return fp
}

var (
	fpA = fingerprint("payload A")
	fpB = fingerprint("payload B")
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), waitFor)
	t.Cleanup(cancel)
	return c
}

// acquire, as mustClaim's want, says that the Claim must acquire the key.
const acquire keystore.State = -1

// mustClaim claims key with a fresh token and fails t unless the Claim
// acquires it (want acquire) or finds it in the state want.
func mustClaim(t *testing.T, s keystore.Store, key string, fp keystore.Fingerprint, lease time.Duration, want keystore.State) claimed {
	t.Helper()
	c, err := claim(ctx(t), s, key, fp, lease)
	if err != nil {
		t.Fatalf("Claim(%.8s…): unexpected error: %v", key, err)
	}
	switch {
	case c.Acquired && want != acquire:
		t.Fatalf("Claim(%.8s…) acquired the key, want %v", key, want)
	case !c.Acquired && want == acquire:
		t.Fatalf("Claim(%.8s…) state = %v, want it acquired", key, c.State)
	case !c.Acquired && c.State != want:
		t.Fatalf("Claim(%.8s…) state = %v, want %v", key, c.State, want)
	}
	switch {
	case c.Acquired:
		if c.State != keystore.InFlight {
			t.Fatalf("acquired Claim reports state %v, want in flight", c.State)
		}
		if c.Fingerprint != fp {
			t.Fatalf("acquired Claim reports fingerprint %x, want the caller's %x", c.Fingerprint[:4], fp[:4])
		}
	case c.State == keystore.InFlight:
		if c.LeaseRemaining <= 0 {
			t.Fatalf("in-flight Claim reports LeaseRemaining %v; it must be positive", c.LeaseRemaining)
		}
	}
	return c
}

func sampleRecord() record.Record {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Add("Link", `</a>; rel="a"`)
	h.Add("Link", `</b>; rel="b"`)
	return record.Record{
		StatusCode: http.StatusCreated,
		Header:     h,
		// Bytes that a careless text encoding would damage: NUL, invalid
		// UTF-8, CR LF and a separator-like sequence.
		Body: []byte("{\"id\":\"x\"}\x00\xff\xfe\r\n--\n\t"),
	}
}

// equalRecords checks that a store returned enc, the record's bytes,
// exactly as want encodes (record.Append), which is what Complete stored.
func equalRecords(t *testing.T, enc []byte, want record.Record) {
	t.Helper()
	sent := record.Append(nil, want)
	if bytes.Equal(enc, sent) {
		return
	}
	t.Errorf("record bytes differ from those Complete stored: got %d bytes, want %d (first difference at %d)", len(enc), len(sent), firstDiff(enc, sent))
	got, err := record.Decode(enc)
	if err != nil {
		t.Errorf("the record's bytes decode to no record: %v", err)
		return
	}
	if got.StatusCode != want.StatusCode {
		t.Errorf("record status = %d, want %d", got.StatusCode, want.StatusCode)
	}
	if !bytes.Equal(got.Body, want.Body) {
		t.Errorf("record body differs: got %d bytes, want %d bytes (first difference at %d)",
			len(got.Body), len(want.Body), firstDiff(got.Body, want.Body))
	}
	if len(got.Header) != len(want.Header) {
		t.Errorf("record has %d header fields %v, want %d %v", len(got.Header), got.Header, len(want.Header), want.Header)
	}
	for k, vs := range want.Header {
		g := got.Header[k]
		if fmt.Sprint(g) != fmt.Sprint(vs) {
			t.Errorf("record header %q = %q, want %q (values and their order must survive)", k, g, vs)
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// eventually polls cond until it returns true or waitFor passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s never happened", waitFor, what)
		}
		time.Sleep(pollEvery)
	}
}

// claimed is a Claim's result with the token it was sent with when it
// acquired the key, the zero Token otherwise.
type claimed struct {
	keystore.Claim
	Token keystore.Token
}

// claim claims key in s for a fresh token (keystore.NewToken), as the
// middleware claims.
func claim(ctx context.Context, s keystore.Store, key string, fp keystore.Fingerprint, lease time.Duration) (claimed, error) {
	tok := keystore.NewToken()
	c, err := s.Claim(ctx, key, keystore.ClaimArgs{Fingerprint: fp, Lease: lease, Token: tok})
	if err != nil || !c.Acquired {
		tok = 0
	}
	return claimed{Claim: c, Token: tok}, err
}
