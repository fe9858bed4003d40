package client_test

import (
	"errors"
	"flag"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/geoidem/geoidem/client"
)

func TestBackoffBounds(t *testing.T) {
	const base, ceiling = 500 * time.Millisecond, 30 * time.Second
	bounds := map[client.Strategy][2]time.Duration{
		client.Decorrelated: {base, ceiling},
		client.FullJitter:   {0, ceiling},
		client.EqualJitter:  {base / 2, ceiling},
		client.Exponential:  {base, ceiling},
		client.None:         {0, 0},
	}
	for _, st := range client.Strategies() {
		t.Run(st.String(), func(t *testing.T) {
			b := client.Backoff{Strategy: st} // zero Base and Cap: the defaults
			lo, hi := bounds[st][0], bounds[st][1]
			sawCap := false
			for seed := range uint64(200) {
				rnd := rand.New(newSource(seed))
				n := 0
				for d := range b.Delays(rnd) {
					n++
					if d < lo || d > hi {
						t.Fatalf("seed %d, retry %d: delay %v outside [%v, %v]", seed, n, d, lo, hi)
					}
					sawCap = sawCap || d >= ceiling*9/10
					if n == 30 {
						break
					}
				}
			}
			if st != client.None && !sawCap {
				t.Errorf("30 retries never came within 10%% of the cap %v", ceiling)
			}
		})
	}
}

func TestBackoffDecorrelatedFormula(t *testing.T) {
	b := client.Backoff{Base: time.Second, Cap: time.Hour}
	rnd := rand.New(newSource(7))
	for _, prev := range []time.Duration{0, time.Second, 2 * time.Second, 10 * time.Second, 50 * time.Minute} {
		for range 1000 {
			d := b.Next(prev, 3, rnd)
			upper := min(time.Hour, 3*max(prev, time.Second))
			if d < time.Second || d > upper {
				t.Fatalf("Next(prev=%v) = %v, want within [1s, %v]", prev, d, upper)
			}
		}
	}
	// prev at the cap: uniform(base, 3·cap) is mostly above the cap, so the
	// cap is the most common result.
	capped := 0
	for range 1000 {
		if b.Next(time.Hour, 9, rnd) == time.Hour {
			capped++
		}
	}
	if capped < 600 {
		t.Errorf("with prev at the cap, %d of 1000 delays were the cap; want about 2/3", capped)
	}
}

func TestBackoffExponential(t *testing.T) {
	b := client.Backoff{Strategy: client.Exponential, Base: 100 * time.Millisecond, Cap: time.Second}
	var got []time.Duration
	for d := range b.Delays(nil) {
		got = append(got, d)
		if len(got) == 6 {
			break
		}
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if !slices.Equal(got, want) {
		t.Errorf("delays = %v, want %v", got, want)
	}
	if d := b.Next(0, math.MaxInt, nil); d != time.Second {
		t.Errorf("Next(retry MaxInt) = %v, want the cap", d)
	}
	m3 := client.Backoff{Strategy: client.Exponential, Base: time.Second, Cap: time.Hour, Multiplier: 3}
	if d := m3.Next(0, 3, nil); d != 9*time.Second {
		t.Errorf("multiplier 3, retry 3: %v, want 9s", d)
	}
}

func TestBackoffSeeds(t *testing.T) {
	seq := func(st client.Strategy, seed uint64) []time.Duration {
		var out []time.Duration
		for d := range (client.Backoff{Strategy: st}).Delays(rand.New(newSource(seed))) {
			out = append(out, d)
			if len(out) == 5 {
				return out
			}
		}
		return out
	}
	for _, st := range []client.Strategy{client.Decorrelated, client.FullJitter, client.EqualJitter} {
		if a, b := seq(st, 1), seq(st, 2); slices.Equal(a, b) {
			t.Errorf("%v: seeds 1 and 2 give the same delays %v", st, a)
		}
		if a, b := seq(st, 3), seq(st, 3); !slices.Equal(a, b) {
			t.Errorf("%v: seed 3 gave %v, then %v", st, a, b)
		}
	}
}

func TestBackoffValidate(t *testing.T) {
	for name, b := range map[string]client.Backoff{
		"cap below base":   {Base: time.Second, Cap: time.Millisecond},
		"negative base":    {Base: -time.Second},
		"small multiplier": {Multiplier: 0.5},
		"NaN multiplier":   {Multiplier: math.NaN()},
		"unknown strategy": {Strategy: client.Strategy(42)},
	} {
		if _, err := client.New(nil, client.Config{Backoff: b}); !errors.Is(err, client.ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want ErrInvalidConfig", name, err)
		}
		// Next must not panic on an invalid Backoff.
		_ = b.Next(time.Second, 2, nil)
	}
	if _, err := client.New(nil, client.Config{Backoff: client.Backoff{}}); err != nil {
		t.Errorf("zero Backoff: %v", err)
	}
}

func TestStrategyText(t *testing.T) {
	for _, st := range client.Strategies() {
		text, err := st.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back client.Strategy
		if err := back.UnmarshalText(text); err != nil || back != st {
			t.Errorf("%v: round trip gave %v, %v", st, back, err)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var st client.Strategy
	fs.TextVar(&st, "strategy", client.Decorrelated, "")
	if err := fs.Parse([]string{"-strategy", "equal"}); err != nil || st != client.EqualJitter {
		t.Errorf("flag -strategy equal: %v, %v", st, err)
	}
	if err := fs.Parse([]string{"-strategy", "bogus"}); err == nil {
		t.Error("flag -strategy bogus: no error")
	}
	if _, err := client.Strategy(-1).MarshalText(); err == nil {
		t.Error("MarshalText of an unknown strategy: no error")
	}
}

// BenchmarkBackoff compares the strategies: the cost of computing a
// six-attempt schedule (five delays), and the mean total wait of such a
// schedule (ms/schedule).
func BenchmarkBackoff(b *testing.B) {
	for _, st := range client.Strategies() {
		b.Run(st.String(), func(b *testing.B) {
			bo := client.Backoff{Strategy: st}
			rnd := rand.New(newSource(1))
			var total time.Duration
			schedules := 0
			for b.Loop() {
				var prev time.Duration
				for n := 1; n <= 5; n++ {
					prev = bo.Next(prev, n, rnd)
					total += prev
				}
				schedules++
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(schedules), "ms/schedule")
		})
	}
}
