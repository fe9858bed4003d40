package frontdoor

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// serveDoor serves a Door built from cfg on 127.0.0.1, its work route
// answering 201 after reading the body, and returns the Door and address.
func serveDoor(t *testing.T, cfg Config) (*Door, string, *atomic.Int64) {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	mux := http.NewServeMux()
	mux.Handle("POST /work", d.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
	})))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := d.Server(mux)
	go func() { _ = srv.Serve(d.Listener(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return d, ln.Addr().String(), &runs
}

// sendArriving opens a connection from ip and sends the head of a POST /work
// with a body of length bytes and the first of its bytes, with header
// lines extra.
func sendArriving(t *testing.T, ip, addr string, length, first int, extra string) net.Conn {
	t.Helper()
	c, err := dialer(ip).Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "POST /work HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n%s", extra, length, strings.Repeat("x", first)); err != nil {
		t.Fatal(err)
	}
	return c
}

// finish sends the rest of a body begun with arriving and returns the
// answer's status (0: the connection ended without one).
func finish(t *testing.T, c net.Conn, rest int) int {
	t.Helper()
	_, _ = io.WriteString(c, strings.Repeat("x", rest))
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := readStatus(c)
	if err != nil {
		return 0
	}
	return resp.StatusCode
}

// A known sender is never cut off: from a listed network, with two bodies
// arriving while another client needs room (it holds the most, and its
// bodies are the slowest), the other client is refused and the known
// sender's bodies arrive and are answered 201. From an unlisted address,
// the same two bodies are cut off for the other client.
func TestDoorNeverCutsAKnownSender(t *testing.T) {
	for _, known := range []bool{false, true} {
		t.Run(fmt.Sprintf("known %t", known), func(t *testing.T) {
			cfg := Config{
				MaxBytes: 8 << 10, Wait: 300 * time.Millisecond,
				BodyGrace: time.Minute, MinBodyRate: 100,
			}
			if known {
				cfg.KnownNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.6.2/32")}
			}
			d, addr, _ := serveDoor(t, cfg)
			// 4 KiB each: what the unknown may hold (three quarters of
			// 8 KiB, with known senders) is then full.
			a := sendArriving(t, "127.0.6.2", addr, 3<<10, 10, "")
			b := sendArriving(t, "127.0.6.2", addr, 3<<10, 10, "")
			waitFor(t, 10*time.Second, "both bodies arriving", func() bool { return d.Stats().Arriving == 2 })
			other := sendArriving(t, "127.0.6.3", addr, 3<<10, 3<<10, "")
			_ = other.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := readStatus(other)
			if err != nil {
				t.Fatal(err)
			}
			codeA, codeB := finish(t, a, 3<<10-10), finish(t, b, 3<<10-10)
			s := d.Stats()
			t.Logf("known %t: the other client %d; the sender's bodies %d, %d; %+v", known, resp.StatusCode, codeA, codeB, s)
			if known {
				if codeA != http.StatusCreated || codeB != http.StatusCreated || s.CutForRoom != 0 {
					t.Errorf("a known sender's bodies: %d, %d, %d cut; want 201 twice, none cut", codeA, codeB, s.CutForRoom)
				}
				if resp.StatusCode != http.StatusServiceUnavailable {
					t.Errorf("the other client, no room and no one to cut: %d, want 503", resp.StatusCode)
				}
				return
			}
			if s.CutForRoom == 0 || resp.StatusCode != http.StatusCreated {
				t.Errorf("an unknown sender holding the most: %d cut, the other client %d; want a body cut and 201 (else the test proves nothing)", s.CutForRoom, resp.StatusCode)
			}
		})
	}
}

// A sender whose signature verified is known from then on (never cut,
// counted in KnownAdmitted); one with a junk but well-formed signature
// earns nothing.
func TestDoorVerifiedSenderIsKnown(t *testing.T) {
	errBad := errors.New("bad signature")
	d, addr, _ := serveDoor(t, Config{
		MaxBytes: 8 << 10, Wait: 300 * time.Millisecond,
		BodyGrace: time.Minute, MinBodyRate: 100,
		Verify: func(h http.Header, body []byte) error {
			if h.Get("Sig") == "good" {
				return nil
			}
			return errBad
		},
	})
	for _, ip := range []string{"127.0.7.2", "127.0.7.3"} {
		sig := "good"
		if ip == "127.0.7.3" {
			sig = "junk"
		}
		if code := finish(t, sendArriving(t, ip, addr, 10, 0, "Sig: "+sig+"\r\n"), 10); code != http.StatusCreated {
			t.Fatalf("%s: %d", ip, code)
		}
	}
	if got := d.Stats().KnownAdmitted; got != 1 {
		t.Errorf("KnownAdmitted = %d after one verified body and one junk, want 1", got)
	}
	// Each holds two bodies arriving; a third client needs room twice.
	var held []net.Conn
	for _, ip := range []string{"127.0.7.2", "127.0.7.3"} {
		for range 2 {
			held = append(held, sendArriving(t, ip, addr, 1<<10, 10, ""))
		}
	}
	waitFor(t, 10*time.Second, "four bodies arriving", func() bool { return d.Stats().Arriving == 4 })
	for i := range 2 {
		c := sendArriving(t, "127.0.7.4", addr, 4<<10, 4<<10, "")
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := readStatus(c)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("the third client's body %d: %d", i, resp.StatusCode)
	}
	var codes []int
	for _, c := range held {
		codes = append(codes, finish(t, c, 1<<10-10))
	}
	if codes[0] != http.StatusCreated || codes[1] != http.StatusCreated {
		t.Errorf("the verified sender's bodies: %v; want 201 (never cut)", codes[:2])
	}
	if codes[2] != http.StatusRequestTimeout && codes[3] != http.StatusRequestTimeout {
		t.Errorf("the junk-signature sender's bodies: %v; want one cut off (408) to make room", codes[2:])
	}
}

// A 503 for want of room says when room frees: a body arriving holds the
// bytes until its deadline (grace 2 s + 1000 bytes at 1000 bytes/s: 3 s),
// so the Retry-After is 3 s; and retried then, the request is admitted.
func TestDoorRetryAfterIsTrue(t *testing.T) {
	d, addr, _ := serveDoor(t, Config{
		MaxBytes: 1000, Wait: 200 * time.Millisecond,
		BodyGrace: 2 * time.Second, MinBodyRate: 1000,
	})
	sendArriving(t, "127.0.8.2", addr, 1000, 1, "") // never finished: cut off at its deadline
	waitFor(t, 10*time.Second, "the body arriving", func() bool { return d.Stats().Arriving == 1 })
	c := sendArriving(t, "127.0.8.2", addr, 1000, 1000, "") // the same client: nothing to cut
	resp, err := readStatus(c)
	if err != nil {
		t.Fatal(err)
	}
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusServiceUnavailable || ra < 2 || ra > 3 {
		t.Fatalf("no room: %d Retry-After %q; want 503 with 2 or 3 s, when the body arriving is due", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	time.Sleep(time.Duration(ra) * time.Second)                                                             // as the sender does
	waitFor(t, 10*time.Second, "the body arriving cut off", func() bool { return d.Stats().Arriving == 0 }) // a loaded machine may lag
	if code := finish(t, sendArriving(t, "127.0.8.2", addr, 1000, 1000, ""), 0); code != http.StatusCreated {
		t.Errorf("retried after Retry-After: %d, want 201", code)
	}
}

// Bodies that never arrive on every connection the server takes: a
// sender's new connection waits for room (in Accept, then in the kernel's
// accept queue, where the server cannot see it) until one is cut off.
// While the connections are crowded, a body that has not moved for a
// second is cut off (long before the rate's grace, a minute here), and
// the sender is served.
func TestDoorCutsStalledBodiesWhenConnectionsAreCrowded(t *testing.T) {
	d, addr, _ := serveDoor(t, Config{
		MaxConns: 16, MaxConnsPerHost: -1, MaxIdle: 8,
		BodyGrace: time.Minute, MinBodyRate: 100,
	})
	for i := range 15 { // MaxConns less the one kept for the connection being accepted
		sendArriving(t, fmt.Sprint("127.0.9.", 2+i), addr, 100, 0, "")
	}
	waitFor(t, 10*time.Second, "15 bodies arriving", func() bool { return d.Stats().Arriving == 15 })
	c := clientFrom("127.0.9.40")
	resp, err := c.Post("http://"+addr+"/work", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("a sender while bodies that never arrive hold every connection: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("the sender: %d, want 201", resp.StatusCode)
	}
	if s := d.Stats(); s.CutStalled == 0 {
		t.Errorf("no stalled body cut off: %+v", s)
	}
}

// A known sender with more bodies arriving than any other client still
// makes room for its next one, by cutting off an unknown sender's.
func TestDoorKnownSenderMakesRoom(t *testing.T) {
	d, addr, _ := serveDoor(t, Config{
		MaxBytes: 16 << 10, Wait: 2 * time.Second, // large bodies: at most 12 KiB
		BodyGrace: time.Minute, MinBodyRate: 100,
		KnownNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.10.2/32")},
	})
	var known []net.Conn
	for range 2 {
		known = append(known, sendArriving(t, "127.0.10.2", addr, 3<<10, 10, ""))
	}
	for i := range 2 {
		sendArriving(t, fmt.Sprint("127.0.10.", 3+i), addr, 3<<10, 1, "")
	}
	waitFor(t, 10*time.Second, "four bodies arriving", func() bool { return d.Stats().Arriving == 4 })
	if code := finish(t, sendArriving(t, "127.0.10.2", addr, 3<<10, 3<<10, ""), 0); code != http.StatusCreated {
		t.Errorf("the known sender's third body, with no room: %d, want 201 (room made)", code)
	}
	for _, c := range known {
		if code := finish(t, c, 3<<10-10); code != http.StatusCreated {
			t.Errorf("the known sender's body: %d, want 201", code)
		}
	}
	if s := d.Stats(); s.CutForRoom == 0 {
		t.Errorf("no body cut for the known sender: %+v", s)
	}
}
