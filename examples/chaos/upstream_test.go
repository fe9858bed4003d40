package main

import (
	"io"
	"testing"
)

// TestUpstreamRow runs the -upstream row small: geoidem proxy in front of
// the aiohttp receiver, killed before and after its work in requests. With
// the key held on an uncertain outcome nothing runs twice, and once the
// operator released the keys the receiver had not run, nothing is lost;
// a receiver that deduplicates by the forwarded key runs nothing twice
// even when the key is released; releasing before one that does not
// deduplicate runs events twice (the cost the hold saves).
func TestUpstreamRow(t *testing.T) {
	rows, err := runUpstreamChaos(t.Context(), upstreamOptions{events: 60, senders: 4, seed: 3, dieBefore: 0.05, dieAfter: 0.1}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		t.Logf("%+v", r)
		if r.deaths == 0 || r.uncertain == 0 {
			t.Errorf("%s dedup=%t: %d deaths, %d uncertain outcomes: no fault landed, the row proves nothing", r.mode, r.dedup, r.deaths, r.uncertain)
		}
		switch {
		case r.mode == "hold":
			if r.twice != 0 || r.twiceAfter != 0 || r.lostAfter != 0 || r.released != r.lost {
				t.Errorf("hold dedup=%t: run twice %d (after the operator %d), lost %d, released %d, lost after the operator %d; want 0 twice, every lost event released, 0 lost after", r.dedup, r.twice, r.twiceAfter, r.lost, r.released, r.lostAfter)
			}
		case r.dedup:
			if r.twice != 0 || r.lost != 0 {
				t.Errorf("release before a deduplicating receiver: run twice %d, lost %d, want 0", r.twice, r.lost)
			}
		default:
			if r.twice == 0 {
				t.Errorf("release before a receiver that does not deduplicate: nothing ran twice; the kills after the work did not land")
			}
		}
	}
}
