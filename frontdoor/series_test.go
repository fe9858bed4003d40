package frontdoor

import (
	"slices"
	"testing"
)

// TestSeriesReadEveryDecision checks that each of the Door's decisions and
// states is read into its series, under its label, that the series of
// one name come together (an exporter writes a name's help once), and
// that a zero Stats has every series, in the same order.
func TestSeriesReadEveryDecision(t *testing.T) {
	s := Stats{
		Conns: 1, IdleConns: 2, HeldConns: 3, WaitingConns: 4, ConnsRefused: 5, ConnsClosedIdle: 6, ConnsClosedBusy: 7, ConnsEvicted: 8, ConnsWaited: 9,
		Arriving: 10, Bytes: 11, Slots: 12, KnownSlots: 13, Answering: 14,
		CutSlow: 15, CutForRoom: 16, CutStalled: 17, RefusedBusy: 18, RefusedClient: 19, KnownAdmitted: 20, AnswersCut: 21,
	}
	want := map[string]float64{
		"geoidem_frontdoor_connections state=open": 1, "geoidem_frontdoor_connections state=idle": 2,
		"geoidem_frontdoor_connections state=held": 3, "geoidem_frontdoor_connections state=waiting": 4,
		"geoidem_frontdoor_connections_closed_total reason=host": 5, "geoidem_frontdoor_connections_closed_total reason=idle": 6,
		"geoidem_frontdoor_connections_closed_total reason=busy": 7, "geoidem_frontdoor_connections_closed_total reason=idle_bound": 8,
		"geoidem_frontdoor_connections_waited_total": 9,
		"geoidem_frontdoor_bodies_arriving":          10, "geoidem_frontdoor_body_bytes": 11,
		"geoidem_frontdoor_slots_held": 12, "geoidem_frontdoor_known_slots_held": 13, "geoidem_frontdoor_answers_writing": 14,
		"geoidem_frontdoor_bodies_cut_total reason=slow": 15, "geoidem_frontdoor_bodies_cut_total reason=room": 16,
		"geoidem_frontdoor_bodies_cut_total reason=stalled":  17,
		"geoidem_frontdoor_refused_total reason=server_busy": 18, "geoidem_frontdoor_refused_total reason=client_busy": 19,
		"geoidem_frontdoor_known_admitted_total": 20, "geoidem_frontdoor_answers_cut_total": 21,
	}
	got := map[string]float64{}
	var names []string
	for _, x := range series(s) {
		k := x.Name
		if x.Label != "" {
			k += " " + x.Label + "=" + x.Value
		}
		if _, dup := got[k]; dup {
			t.Errorf("%s twice", k)
		}
		got[k] = x.N
		if x.Help == "" {
			t.Errorf("%s has no help", k)
		}
		if x.Counter != (len(x.Name) > 6 && x.Name[len(x.Name)-6:] == "_total") {
			t.Errorf("%s: counter %v", x.Name, x.Counter)
		}
		if len(names) == 0 || names[len(names)-1] != x.Name {
			names = append(names, x.Name)
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d series, want %d: %v", len(got), len(want), got)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("%s not grouped: it comes back after another name (%v)", n, names)
		}
		seen[n] = true
	}
	zero := series(Stats{})
	if len(zero) != len(want) {
		t.Errorf("zero Stats: %d series, want %d", len(zero), len(want))
	}
	var zeroNames []string
	for _, x := range zero {
		if len(zeroNames) == 0 || zeroNames[len(zeroNames)-1] != x.Name {
			zeroNames = append(zeroNames, x.Name)
		}
	}
	if !slices.Equal(zeroNames, names) {
		t.Errorf("zero Stats: series %v, want %v", zeroNames, names)
	}
}

// aSeries is one call of Stats.Series.
type aSeries struct {
	Name, Help   string
	Counter      bool
	Label, Value string
	N            float64
}

// series returns the calls of s.Series, in order.
func series(s Stats) []aSeries {
	var out []aSeries
	s.Series(func(name, help string, counter bool, label, value string, n float64) {
		out = append(out, aSeries{name, help, counter, label, value, n})
	})
	return out
}
