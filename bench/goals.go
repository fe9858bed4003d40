package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// The performance goals, each figure next to its bound, gathered from the
// sections that measure them (http, validate, journal) and written as one
// table under the summary: the report's goals section.

// A goalRow is one measured figure and its goal.
type goalRow struct {
	figure string
	value  float64   // the figure: the median over the rounds unless the section says otherwise
	rounds []float64 // the figure in each round, for the range
	// roundsMet is how many rounds met the goal on their own (for
	// allocation goals, against that round's baseline).
	roundsMet int
	bound     float64 // the goal
	atMost    bool    // the goal is an upper bound (else a lower bound)
	goalText  string  // the goal as written in the table
	digits    int     // decimals of value and range
	// control is the same figure in each round for the A/A control (the
	// bare handler against itself), if the goal has one: the figure's
	// noise floor.
	control []float64
}

// met reports whether the figure meets its goal.
func (g goalRow) met() bool {
	if math.IsNaN(g.value) {
		return false
	}
	if g.atMost {
		return g.value <= g.bound
	}
	return g.value >= g.bound
}

// metText is the table's "met?" cell: "yes" when the figure and every round
// meet the goal, "yes (k of n rounds)" when the figure does but some rounds
// do not, "no" otherwise.
func (g goalRow) metText() string {
	switch {
	case !g.met():
		return "**no**"
	case len(g.rounds) > 1 && g.roundsMet < len(g.rounds):
		return fmt.Sprintf("yes (%d of %d rounds)", g.roundsMet, len(g.rounds))
	}
	return "yes"
}

// measuredText is the table's "measured" cell: the figure, then its range
// over the rounds.
func (g goalRow) measuredText() string {
	v := fmt.Sprintf("%.*f", g.digits, g.value)
	if len(g.rounds) > 1 {
		v += fmt.Sprintf(" (%.*f–%.*f)", g.digits, slices.Min(g.rounds), g.digits, slices.Max(g.rounds))
	}
	return v
}

// controlText is the table's "A/A control" cell: the control's median and
// range over the rounds, as the figure's, or "–" without a control.
func (g goalRow) controlText() string {
	if len(g.control) == 0 {
		return "–"
	}
	return goalRow{value: median(g.control), rounds: g.control, digits: g.digits}.measuredText()
}

// ratioGoal is a figure that should be at least bound: value is the figure,
// rounds its per-round values.
func ratioGoal(figure string, value float64, rounds []float64, bound float64) goalRow {
	return boundGoal(figure, value, rounds, bound, false)
}

// ceilingGoal is a ratio that should be at most bound.
func ceilingGoal(figure string, value float64, rounds []float64, bound float64) goalRow {
	return boundGoal(figure, value, rounds, bound, true)
}

// boundGoal is a ratio and its bound, a ceiling when atMost.
func boundGoal(figure string, value float64, rounds []float64, bound float64, atMost bool) goalRow {
	g := goalRow{figure: figure, value: value, rounds: rounds, bound: bound, atMost: atMost, digits: 3}
	g.goalText = fmt.Sprintf("≥ %.2f", bound)
	if atMost {
		g.goalText = fmt.Sprintf("≤ %.2f", bound)
	}
	for _, r := range rounds {
		if (goalRow{value: r, bound: bound, atMost: atMost}).met() {
			g.roundsMet++
		}
	}
	return g
}

// allocGoal is an allocation count that should be at most the baseline's
// plus extra: the medians over the rounds are compared, and round i's count
// with round i's baseline.
func allocGoal(figure string, rounds, baseline []float64, baseName string, extra float64) goalRow {
	base := median(baseline)
	g := goalRow{figure: figure, value: median(rounds), rounds: rounds, bound: base + extra, atMost: true, digits: 1,
		goalText: fmt.Sprintf("≤ %.1f (%s %.1f + %g)", base+extra, baseName, base, extra)}
	for i, r := range rounds {
		if i < len(baseline) && r <= baseline[i]+extra {
			g.roundsMet++
		}
	}
	return g
}

// goalBook collects the goal rows of one run, in the order the sections add
// them.
type goalBook struct {
	rows []goalRow
	from map[string]bool // sections that added rows
}

func (b *goalBook) add(section string, g goalRow) {
	if b.from == nil {
		b.from = map[string]bool{}
	}
	b.rows = append(b.rows, g)
	b.from[section] = true
}

// goalSources are the sections that measure the goals' figures, and what
// each measures.
var goalSources = []struct{ section, what string }{
	{"http", "throughput ratios and allocations per request of the whole server"},
	{"validate", "geojson.Validate ÷ encoding/json.Valid"},
	{"journal", "sender journal ÷ the disk's fsync rate"},
}

// markdown is the goals section: one table of every
// figure of the run next to its goal, and the sections that would have
// measured the rest. It is empty when no section added a row.
func (b *goalBook) markdown(command string) string {
	if len(b.rows) == 0 {
		return ""
	}
	var s strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&s, format+"\n", args...) }
	p("## Goals")
	p("")
	p("Every figure of the goal table that this run measured, next to its goal, all from `%s`.", command)
	p("Ratios are the median over the interleaved rounds of the ratio within a round, then their range; allocations are per request of")
	p("the whole server (net/http, middleware, store and its client), the median over the rounds, then their range. *met?* compares the")
	p("median with the goal, and says how many rounds met it on their own when not all did. How each figure is measured: sections 1")
	p("(throughput, allocations, and p99: a round's p99 latency over the bare handler's p99 in the same round), 3 (*Validate ÷")
	p("json.Valid*: there the figure is the best time of the rounds over the best, and the range is the rounds' own ratios) and 8")
	p("(journal).")
	controls := slices.ContainsFunc(b.rows, func(g goalRow) bool { return len(g.control) > 0 })
	if controls {
		p("")
		p("*A/A control*: the same figure for the bare handler measured a second time, in a slot of memstore's rotation, against")
		p("the bare handler: what the figure reads when nothing differs, so a goal is judged beside its noise floor.")
	}
	p("")
	if controls {
		p("| figure | measured (median, range) | A/A control (median, range) | goal | met? |")
		p("| --- | ---: | ---: | ---: | --- |")
	} else {
		p("| figure | measured (median, range) | goal | met? |")
		p("| --- | ---: | ---: | --- |")
	}
	met := 0
	for _, g := range b.rows {
		if controls {
			p("| %s | %s | %s | %s | %s |", g.figure, g.measuredText(), g.controlText(), g.goalText, g.metText())
		} else {
			p("| %s | %s | %s | %s |", g.figure, g.measuredText(), g.goalText, g.metText())
		}
		if g.met() {
			met++
		}
	}
	p("")
	p("**%d of %d goals met in this run.**", met, len(b.rows))
	var missing []string
	for _, src := range goalSources {
		if !b.from[src.section] {
			missing = append(missing, fmt.Sprintf("%s (section `%s`)", src.what, src.section))
		}
	}
	if len(missing) > 0 {
		p("Not measured in this run: %s; `go run ./bench -only goals` runs every section the table draws from.", strings.Join(missing, "; "))
	}
	p("")
	return s.String()
}
