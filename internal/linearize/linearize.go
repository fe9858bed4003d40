// Package linearize checks whether a concurrent history of operations on one
// object is linearizable with respect to a sequential model of that object:
// whether each operation can be given a single instant between its call and
// its return at which it took effect, so that the operations, applied to the
// model in the order of those instants, give exactly the outputs observed.
//
// The search is Wing & Gong's, with Lowe's memoisation (as in the P-compositionality
// and "just-in-time linearizability" papers, and the porcupine checker): a
// depth-first search over the orders allowed by real time, which never visits
// the same pair (set of operations linearized, model state) twice. Models may
// be nondeterministic: [Model.Step] returns every state the object may be in
// after an operation, which is how an operation whose effect is unknown (a
// call that timed out) is modelled: "it took effect" and "it did not" are
// both allowed.
//
// The package has no dependency outside the standard library, so that it
// adds nothing to what users of this module inherit.
//
// # Histories
//
// An [Operation] carries its call and return as positions on one time line
// (any unit, as long as every client's calls and returns are on it): op A
// precedes op B, and must be linearized before it, exactly when A.Return <
// B.Call. An operation whose outcome is unknown has Return = [Pending]: it
// may take effect at any time after its call, even after the client gave up
// on it, since a request may still be sitting in a server's input buffer.
//
// A history of several independent objects (keys) is checked one object at
// a time: linearizability is compositional (Herlihy & Wing), so the whole is
// linearizable exactly when each object's sub-history is.
package linearize

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Pending is the Return of an operation whose outcome is unknown.
const Pending = math.MaxInt64

// Operation is one call in a history.
type Operation[I, O any] struct {
	Client int   // who called; used only in descriptions
	Call   int64 // when the call was made
	Return int64 // when it returned, or Pending
	Input  I
	Output O
}

// Model is the sequential specification of one object.
type Model[S comparable, I, O any] struct {
	// Init is the object's state before the first operation.
	Init S
	// Step returns the states the object may be in after op takes effect in
	// state s, producing op.Output: none when that output is impossible in
	// s, several when the model is nondeterministic.
	Step func(s S, op Operation[I, O]) []S
	// DescribeOperation and DescribeState render operations and states in
	// failure reports; either may be nil (fmt's %+v is used).
	DescribeOperation func(op Operation[I, O]) string
	DescribeState     func(s S) string
}

// Verdict is the outcome of a check.
type Verdict int

const (
	// Linearizable: some order of the operations is allowed by real time
	// and by the model.
	Linearizable Verdict = iota + 1
	// Illegal: no order is.
	Illegal
	// Unknown: the search gave up after Budget states.
	Unknown
)

func (v Verdict) String() string {
	switch v {
	case Linearizable:
		return "linearizable"
	case Illegal:
		return "not linearizable"
	case Unknown:
		return "unknown (search budget exhausted)"
	}
	return "invalid verdict"
}

// DefaultBudget bounds the pairs (set linearized, state) that Check
// explores before it gives up with Unknown.
const DefaultBudget = 1 << 18

// Result is what Check found.
type Result[S comparable, I, O any] struct {
	Verdict Verdict
	// Explored counts the search's distinct (set linearized, state) pairs.
	Explored int
	// Longest is the longest order found that the model accepts, as indexes
	// into the history in the order of linearization, and States the state
	// after each. When Verdict is Illegal, no operation outside Longest can
	// follow it: the history goes wrong right after it.
	Longest []int
	States  []S

	model   Model[S, I, O]
	history []Operation[I, O]
}

// Check reports whether history is linearizable with respect to m, exploring
// at most budget pairs (set linearized, state); budget <= 0 means
// DefaultBudget.
func Check[S comparable, I, O any](m Model[S, I, O], history []Operation[I, O], budget int) Result[S, I, O] {
	if budget <= 0 {
		budget = DefaultBudget
	}
	c := &checker[S, I, O]{
		m:      m,
		ops:    history,
		order:  make([]int, len(history)),
		done:   make([]uint64, (len(history)+63)/64),
		seen:   make(map[memo[S]]struct{}),
		budget: budget,
	}
	for i := range c.order {
		c.order[i] = i
	}
	// Candidates are scanned in call order (see next).
	slices.SortStableFunc(c.order, func(a, b int) int {
		switch ca, cb := history[a].Call, history[b].Call; {
		case ca < cb:
			return -1
		case ca > cb:
			return 1
		}
		return 0
	})
	ok := c.search(m.Init, 0)
	r := Result[S, I, O]{Explored: len(c.seen), Longest: c.best, States: c.bestStates, model: m, history: history}
	switch {
	case ok:
		r.Verdict = Linearizable
	case c.exhausted:
		r.Verdict = Unknown
	default:
		r.Verdict = Illegal
	}
	return r
}

type memo[S comparable] struct {
	done  string
	state S
}

type checker[S comparable, I, O any] struct {
	m     Model[S, I, O]
	ops   []Operation[I, O]
	order []int    // history indexes sorted by Call
	done  []uint64 // bit i: history[i] is linearized

	seen      map[memo[S]]struct{}
	budget    int
	exhausted bool

	path, best        []int
	pathS, bestStates []S
}

func (c *checker[S, I, O]) isDone(i int) bool { return c.done[i/64]&(1<<(i%64)) != 0 }
func (c *checker[S, I, O]) flip(i int)        { c.done[i/64] ^= 1 << (i % 64) }

func (c *checker[S, I, O]) doneKey() string {
	var b strings.Builder
	b.Grow(8 * len(c.done))
	for _, w := range c.done {
		for k := range 8 {
			b.WriteByte(byte(w >> (8 * k)))
		}
	}
	return b.String()
}

// search tries to linearize every operation not yet done, from state s; n
// operations are done.
func (c *checker[S, I, O]) search(s S, n int) bool {
	if n == len(c.ops) {
		return true
	}
	// An operation may go next when no other pending one returned before it
	// was called. Scanning in call order, that holds for op exactly when its
	// call comes no later than the earliest return among the not-done
	// operations called before it; once one fails, all later ones do.
	minRet := int64(math.MaxInt64)
	for _, i := range c.order {
		if c.isDone(i) {
			continue
		}
		op := c.ops[i]
		if op.Call > minRet {
			break
		}
		minRet = min(minRet, op.Return)
		for _, next := range c.m.Step(s, op) {
			c.flip(i)
			k := memo[S]{done: c.doneKey(), state: next}
			if _, ok := c.seen[k]; ok {
				c.flip(i)
				continue
			}
			if len(c.seen) >= c.budget {
				c.flip(i)
				c.exhausted = true
				return false
			}
			c.seen[k] = struct{}{}
			c.path, c.pathS = append(c.path, i), append(c.pathS, next)
			if len(c.path) > len(c.best) {
				c.best, c.bestStates = slices.Clone(c.path), slices.Clone(c.pathS)
			}
			ok := c.search(next, n+1)
			c.path, c.pathS = c.path[:len(c.path)-1], c.pathS[:len(c.pathS)-1]
			c.flip(i)
			if ok || c.exhausted {
				return ok
			}
		}
	}
	return false
}

// showLast is how many of the last steps of Result.Longest String shows.
const showLast = 30

// String reports the verdict and, unless the history is linearizable, the
// whole history in call order, the end of the longest order the model
// accepts (its last 30 steps, each with the state after it) and the
// operations that could not follow it.
func (r Result[S, I, O]) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %d operations, %d states explored\n", r.Verdict, len(r.history), r.Explored)
	if r.Verdict == Linearizable {
		return b.String()
	}
	descOp := r.model.DescribeOperation
	if descOp == nil {
		descOp = func(op Operation[I, O]) string { return fmt.Sprintf("%+v", op) }
	}
	descS := r.model.DescribeState
	if descS == nil {
		descS = func(s S) string { return fmt.Sprintf("%+v", s) }
	}
	order := make([]int, len(r.history))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if r.history[a].Call < r.history[b].Call {
			return -1
		} else if r.history[a].Call > r.history[b].Call {
			return 1
		}
		return 0
	})
	b.WriteString("history (in call order):\n")
	for _, i := range order {
		fmt.Fprintf(&b, "  #%-4d %s\n", i, descOp(r.history[i]))
	}
	fmt.Fprintf(&b, "longest order the model accepts (%d of %d operations), from %s:\n", len(r.Longest), len(r.history), descS(r.model.Init))
	in := make(map[int]bool, len(r.Longest))
	for k, i := range r.Longest {
		in[i] = true
		switch {
		case k == len(r.Longest)-showLast-1:
			fmt.Fprintf(&b, "  … %d steps before these\n", k+1)
		case k >= len(r.Longest)-showLast:
			fmt.Fprintf(&b, "  #%-4d %s\n        -> %s\n", i, descOp(r.history[i]), descS(r.States[k]))
		}
	}
	// The operations that real time allowed next, after Longest: the model
	// accepts none of them in the last state.
	b.WriteString("operations that real time allows next, none of which the model accepts in that state:\n")
	minRet, later := int64(math.MaxInt64), 0
	for _, i := range order {
		if in[i] {
			continue
		}
		if r.history[i].Call > minRet {
			later++
			continue
		}
		minRet = min(minRet, r.history[i].Return)
		fmt.Fprintf(&b, "  #%-4d %s\n", i, descOp(r.history[i]))
	}
	fmt.Fprintf(&b, "and %d later operations.\n", later)
	return b.String()
}
