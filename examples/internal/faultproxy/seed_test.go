package faultproxy

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// outcome is what a client saw for one request.
func outcome(res *http.Response, err error) string {
	switch {
	case err != nil:
		return "error"
	case res.Header.Get(HeaderFault) != "":
		return res.Header.Get(HeaderFault)
	default:
		return strconv.Itoa(res.StatusCode)
	}
}

// run sends n requests one after another and returns the decided faults
// and what the client saw.
func run(t *testing.T, seed uint64, n int) (faults []Fault, seen []string, st Stats, backendGot int64) {
	t.Helper()
	b := newBackend(t)
	var mu sync.Mutex
	p, u := start(t, b, Config{
		Seed: seed, LostAck: 0.15, Inject503: 0.15, Inject429: 0.15, Reset: 0.15, Delay: 0.1,
		DelayFor: 5 * time.Millisecond,
		OnDecision: func(_ uint64, _ *http.Request, f Fault) {
			mu.Lock()
			faults = append(faults, f)
			mu.Unlock()
		},
	})
	c := freshClient(t, 5*time.Second)
	for i := range n {
		res, _, err := post(c, u, strconv.Itoa(i))
		seen = append(seen, outcome(res, err))
	}
	shutdown(t, p)
	return faults, seen, p.Stats(), b.got.Load()
}

func TestSeedReproducible(t *testing.T) {
	const n = 60
	f1, s1, st1, got1 := run(t, 1, n)
	f2, s2, _, _ := run(t, 1, n)
	f3, s3, _, _ := run(t, 2, n)
	if len(f1) != n {
		t.Fatalf("%d decisions for %d requests", len(f1), n)
	}
	if !slices.Equal(f1, f2) || !slices.Equal(s1, s2) {
		t.Errorf("seed 1 twice gave different runs:\n%v\n%v\n%v\n%v", f1, f2, s1, s2)
	}
	if slices.Equal(f1, f3) || slices.Equal(s1, s3) {
		t.Errorf("seeds 1 and 2 gave the same run: %v", f1)
	}
	for f := None; f <= Delay; f++ {
		if !slices.Contains(f1, f) {
			t.Errorf("no %v in %d requests: %v", f, n, f1)
		}
	}
	// What the client saw matches what was decided.
	for i, f := range f1 {
		want := map[Fault]string{None: "201", Delay: "201", LostAck: "error", Reset: "error",
			Inject503: "inject-503", Inject429: "inject-429"}[f]
		if s1[i] != want {
			t.Errorf("request %d: decided %v, client saw %s, want %s", i+1, f, s1[i], want)
		}
	}
	// Stats add up.
	var sum uint64
	for f := None; f <= Down; f++ {
		sum += st1.Count(f)
		var c uint64
		for _, g := range f1 {
			if g == f {
				c++
			}
		}
		if st1.Count(f) != c {
			t.Errorf("Stats.Count(%v) = %d, decided %d times", f, st1.Count(f), c)
		}
	}
	if st1.Requests != n || sum != n || st1.Injected() != n-st1.None {
		t.Errorf("Stats = %+v: counts sum to %d, want %d", st1, sum, n)
	}
	if want := st1.None + st1.LostAck + st1.Delay; st1.Forwarded != want || uint64(got1) != want {
		t.Errorf("Forwarded = %d, backend got %d, want None+LostAck+Delay = %d", st1.Forwarded, got1, want)
	}
}

func TestPauseResumeDown(t *testing.T) {
	b := newBackend(t)
	p, u := start(t, b, Config{Reset: 1})
	c := freshClient(t, 5*time.Second)
	expect := func(what, want string) {
		t.Helper()
		res, _, err := post(c, u, what)
		if got := outcome(res, err); got != want {
			t.Errorf("%s: client saw %s, want %s (err %v)", what, got, want, err)
		}
	}
	expect("faulty", "error")
	p.Pause()
	expect("paused", "201")
	p.Resume()
	expect("resumed", "error")
	p.SetDown(true)
	p.Pause()
	expect("down", "error")
	p.SetDown(false)
	expect("up, paused", "201")
	p.Resume()
	if err := p.SetConfig(Config{Inject429: 1}); err != nil {
		t.Fatal(err)
	}
	expect("reconfigured", "inject-429")
	if err := p.SetConfig(Config{Inject429: 2}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("SetConfig(Inject429: 2) = %v, want ErrInvalidConfig", err)
	}
	if cfg := p.Config(); cfg.Inject429 != 1 || cfg.RetryAfter != DefaultRetryAfter {
		t.Errorf("after a failed SetConfig, Config() = %+v", cfg)
	}
	_ = p.Close()
	want := Stats{Requests: 6, None: 2, Reset: 2, Down: 1, Inject429: 1, Forwarded: 2}
	if st := p.Stats(); st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
	if n := b.got.Load(); n != 2 {
		t.Errorf("backend got %d requests, want 2", n)
	}
}

func TestHandlerOnOwnServer(t *testing.T) {
	b := newBackend(t)
	p, err := New(b.url(t), Config{Schedule: map[uint64]Fault{2: Reset}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	defer p.Close()
	c := freshClient(t, 5*time.Second)
	if res, _, err := post(c, srv.URL, "a"); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("request 1: %v %v, want 201", res, err)
	}
	if _, _, err := post(c, srv.URL, "b"); !isReset(err) {
		t.Fatalf("request 2: err %v, want a reset", err)
	}
	_ = p.Close()
	if _, _, err := post(c, srv.URL, "c"); !isReset(err) {
		t.Fatalf("after Close: err %v, want a reset", err)
	}
}

func TestNewRejects(t *testing.T) {
	loop, _ := url.Parse("http://127.0.0.1:1")
	for name, tc := range map[string]struct {
		target string
		cfg    Config
	}{
		"remote target":   {"http://192.0.2.1:80", Config{}},
		"named target":    {"http://example.com", Config{}},
		"https target":    {"https://127.0.0.1:1", Config{}},
		"negative":        {"", Config{Reset: -0.1}},
		"above one":       {"", Config{LostAck: 1.5}},
		"NaN":             {"", Config{Delay: nanValue()}},
		"sum above one":   {"", Config{LostAck: 0.6, Reset: 0.6}},
		"scheduled Down":  {"", Config{Schedule: map[uint64]Fault{3: Down}}},
		"unknown fault":   {"", Config{Schedule: map[uint64]Fault{3: Fault(99)}}},
		"negative delay":  {"", Config{DelayFor: -time.Second}},
		"unknown form":    {"", Config{RetryAfterForm: 7}},
		"unknown mode":    {"", Config{DelayMode: 7}},
		"negative buffer": {"", Config{MaxBufferBytes: -1}},
	} {
		target := loop
		if tc.target != "" {
			target, _ = url.Parse(tc.target)
		}
		if _, err := New(target, tc.cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want ErrInvalidConfig", name, err)
		}
	}
	for _, ok := range []string{"http://127.0.0.1:1", "http://[::1]:1", "http://localhost:1/base"} {
		target, _ := url.Parse(ok)
		p, err := New(target, Config{LostAck: 0.5, Reset: 0.5})
		if err != nil {
			t.Errorf("New(%s) = %v", ok, err)
			continue
		}
		_ = p.Close()
	}
	if _, err := New(nil, Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New(nil) = %v", err)
	}
}

func nanValue() float64 {
	zero := 0.0
	return zero / zero
}

func TestFaultString(t *testing.T) {
	if None.String() != "none" || LostAck.String() != "lost-ack" || Down.String() != "down" || Fault(42).String() != "Fault(42)" {
		t.Errorf("String: %v %v %v %v", None, LostAck, Down, Fault(42))
	}
}
