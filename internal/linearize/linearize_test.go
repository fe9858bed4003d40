package linearize_test

import (
	"strings"
	"testing"

	"github.com/geoidem/geoidem/internal/linearize"
)

// A register: write(v) and read() -> v, the textbook object.
type regIn struct {
	write bool
	v     int
}

type regOp = linearize.Operation[regIn, int]

var register = linearize.Model[int, regIn, int]{
	Init: 0,
	Step: func(s int, op regOp) []int {
		if op.Input.write {
			return []int{op.Input.v}
		}
		if op.Output == s {
			return []int{s}
		}
		return nil
	},
}

func w(client int, call, ret int64, v int) regOp {
	return regOp{Client: client, Call: call, Return: ret, Input: regIn{write: true, v: v}}
}

func r(client int, call, ret int64, v int) regOp {
	return regOp{Client: client, Call: call, Return: ret, Output: v}
}

func TestRegister(t *testing.T) {
	cases := []struct {
		name string
		h    []regOp
		want linearize.Verdict
	}{
		{"empty", nil, linearize.Linearizable},
		{"sequential", []regOp{w(0, 0, 1, 1), r(1, 2, 3, 1)}, linearize.Linearizable},
		{"stale read after write returned", []regOp{w(0, 0, 1, 1), r(1, 2, 3, 0)}, linearize.Illegal},
		{"read concurrent with write sees either", []regOp{w(0, 0, 10, 1), r(1, 1, 2, 0), r(2, 3, 4, 1)}, linearize.Linearizable},
		// Once a read saw the new value, a later read may not see the old one.
		{"new-old inversion", []regOp{w(0, 0, 10, 1), r(1, 1, 2, 1), r(2, 3, 4, 0)}, linearize.Illegal},
		{"value never written", []regOp{w(0, 0, 1, 1), r(1, 0, 3, 2)}, linearize.Illegal},
		// A write whose outcome is unknown may take effect long after its
		// caller gave up, or never.
		{"pending write seen late", []regOp{w(0, 0, linearize.Pending, 1), r(1, 5, 6, 0), r(1, 100, 101, 1)}, linearize.Linearizable},
		{"pending write never seen", []regOp{w(0, 0, linearize.Pending, 1), r(1, 5, 6, 0)}, linearize.Linearizable},
		{"ties are concurrent", []regOp{w(0, 0, 5, 1), r(1, 5, 6, 0)}, linearize.Linearizable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := linearize.Check(register, c.h, 0)
			if res.Verdict != c.want {
				t.Errorf("verdict %v, want %v\n%s", res.Verdict, c.want, res)
			}
		})
	}
}

// The report of a failed check shows the history and how far it could be
// linearized.
func TestReportShowsHistory(t *testing.T) {
	h := []regOp{w(0, 0, 1, 7), r(1, 2, 3, 7), r(2, 4, 5, 3)}
	res := linearize.Check(register, h, 0)
	if res.Verdict != linearize.Illegal {
		t.Fatalf("verdict %v, want Illegal", res.Verdict)
	}
	if len(res.Longest) != 2 || res.Longest[0] != 0 || res.Longest[1] != 1 {
		t.Errorf("Longest = %v, want [0 1]", res.Longest)
	}
	out := res.String()
	for _, want := range []string{"not linearizable", "#0", "#1", "#2", "longest order", "allows next", "and 0 later operations"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// Many concurrent writes and reads of a register: memoisation keeps the
// search small, and a budget too small for it gives Unknown, not a verdict.
func TestBudget(t *testing.T) {
	var h []regOp
	for i := range 12 {
		h = append(h, w(i, 0, 100, i+1))
	}
	h = append(h, r(99, 101, 102, 12))
	res := linearize.Check(register, h, 0)
	if res.Verdict != linearize.Linearizable {
		t.Fatalf("verdict %v, want Linearizable\n%s", res.Verdict, res)
	}
	if res := linearize.Check(register, h, 3); res.Verdict != linearize.Unknown {
		t.Errorf("with a budget of 3 states: verdict %v, want Unknown", res.Verdict)
	}
}
