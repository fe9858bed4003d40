package frontdoor

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// victim sends n small valid requests one after another from ip and
// returns how many were answered 2xx, and the other answers.
func victim(t *testing.T, s *service, ip string, n int) (int, map[string]int) {
	t.Helper()
	c := clientFrom(ip)
	defer c.CloseIdleConnections()
	ok, other := 0, map[string]int{}
	for i := range n {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/features", bytes.NewReader([]byte(`{"type":"Feature","id":"v`+strconv.Itoa(i)+`","geometry":null,"properties":null}`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "victim-"+strconv.Itoa(i))
		resp, err := c.Do(req)
		switch {
		case err != nil:
			other[err.Error()]++
		case resp.StatusCode/100 == 2:
			ok++
		default:
			other[resp.Status+" Retry-After "+resp.Header.Get("Retry-After")]++
		}
		if err == nil {
			resp.Body.Close()
		}
		time.Sleep(20 * time.Millisecond) // a sender's pace, not an assertion
	}
	return ok, other
}

// wantAttackHeldOff checks a slow-body attack held off: the sender got at
// least 95% of its n requests answered 2xx (ok; other holds the rest),
// attackers were answered 408, and no slow body claimed its key or
// reached the handler.
func wantAttackHeldOff(t *testing.T, s *service, ok, n int, other map[string]int, statuses map[int]int) {
	t.Helper()
	if ok*100 < 95*n {
		t.Errorf("the sender got %d/%d 2xx under the attack, want at least 95%%: %v", ok, n, other)
	}
	if statuses[http.StatusRequestTimeout] == 0 {
		t.Errorf("no attacker was answered 408: %v", statuses)
	}
	if got := s.store.Stats().Entries; got > n {
		t.Errorf("the store holds %d entries: a slow body claimed its key", got)
	}
	if runs := s.runs.Load(); runs != int64(ok) {
		t.Errorf("the handler ran %d times for %d 2xx: a slow body reached it", runs, ok)
	}
}

// The slow-body attack: 64 connections from 4 addresses
// (127.0.0.2–5), each declaring a 100-byte body and sending a byte every
// 2 s, connecting again whenever one ends. (Behind an admission taken
// before the body is read, with a 30 s ReadTimeout, they held all 64
// slots and a sender on another address was refused every time.) Behind
// the front door under contention (33 connections in all, one kept for
// the connection being accepted, 8 per host; bodies held to 100 bytes/s
// after 500 ms), the slow bodies are cut off, never reach a work slot,
// and the sender, whose connection takes the place of one of theirs,
// gets at least 95% 2xx.
func TestSlowBodiesFromFourAddresses(t *testing.T) {
	hosts := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}
	const perHost = 16 // 64 connections

	s := startService(t, door{door: &Config{
		MaxConnsPerHost: 8, MaxConns: 33, MaxIdle: 16,
		BodyGrace: 500 * time.Millisecond, MinBodyRate: 100,
	}})
	a := startSlowAttack(s.addr, hosts, perHost)
	waitFor(t, 60*time.Second, "the attack under way: every attacker connected once, 24 slow bodies arriving",
		func() bool {
			ds := s.door.Stats()
			return a.started.Load() >= 32 && ds.ConnsRefused > 0 && ds.Arriving >= 24
		})
	const n = 100
	ok, other := victim(t, s, "127.0.0.6", n)
	waitFor(t, 60*time.Second, "a slow body cut off", func() bool { return s.door.Stats().CutSlow > 0 })
	statuses := a.stop()
	ds := s.door.Stats()
	t.Logf("front door: the sender got %d/%d 2xx, and %v; the attackers got %v; door %+v", ok, n, other, statuses, ds)
	if ds.PeakSlots > 4*8+1 {
		t.Errorf("the door held %d work slots at once, want at most 33: the 32 connections open (8 from each of the 4 attacking hosts, or the sender's in the place of one) and one closed to make room", ds.PeakSlots)
	}
	wantAttackHeldOff(t, s, ok, n, other, statuses)
}

// Eight addresses (127.0.0.2–9), 8 connections each behind the front
// door, send slow bodies within the rate's grace (a minute here, so that
// no body is cut off by the rate during the test and nothing frees by
// itself, however slowly the machine runs it): they hold all the bytes
// the door takes (64 bodies of 100 bytes). Each of the sender's requests,
// on a ninth address, is admitted by cutting off the slowest body of a
// client with more arriving (answered 408, nothing claimed), and the
// sender gets at least 95% 2xx.
func TestSlowBodiesFromEightAddresses(t *testing.T) {
	hosts := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7", "127.0.0.8", "127.0.0.9"}
	const perHost = 8 // the front door's bound: 64 connections
	s := startService(t, door{door: &Config{
		MaxBytes:        64 * 100,
		MaxConnsPerHost: perHost,
		BodyGrace:       time.Minute, MinBodyRate: 100,
	}})
	a := startSlowAttack(s.addr, hosts, perHost)
	waitFor(t, 60*time.Second, "the slow bodies hold every byte", func() bool { return s.door.Stats().Bytes == 64*100 })
	const n = 40
	ok, other := victim(t, s, "127.0.0.10", n)
	statuses := a.stop()
	ds := s.door.Stats()
	t.Logf("the sender got %d/%d 2xx, and %v; the attackers got %v; door %+v", ok, n, other, statuses, ds)
	if ds.CutForRoom == 0 {
		t.Errorf("no body was cut off to make room: %+v", ds)
	}
	wantAttackHeldOff(t, s, ok, n, other, statuses)
}
