package geojson

import (
	"cmp"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"
)

// naiveFault is the all-pairs reference for sweeper.run: it reports
// whether the rings have a forbidden contact (a crossing, an overlap, a
// ring touching itself, or touches between one polygon's rings that form
// a cycle).
func naiveFault(rings [][]pt, poly []int) bool {
	type sg struct {
		a, b    pt
		ring, k int
	}
	var segs []sg
	for r, ring := range rings {
		for k := range ring {
			segs = append(segs, sg{ring[k], ring[(k+1)%len(ring)], r, k})
		}
	}
	type touchKey struct {
		p    pt
		poly int
	}
	touches := map[touchKey]map[int]bool{}
	touchPts := map[pt]bool{}
	add := func(p pt, r int) {
		k := touchKey{p, poly[r]}
		if touches[k] == nil {
			touches[k] = map[int]bool{}
		}
		touches[k][r] = true
	}
	for i := range segs {
		for j := i + 1; j < len(segs); j++ {
			a, b := segs[i], segs[j]
			c, p := intersect(a.a, a.b, b.a, b.b)
			if c == cNone {
				continue
			}
			if a.ring == b.ring {
				n := len(rings[a.ring])
				adjacent := (a.k+1)%n == b.k || (b.k+1)%n == a.k
				if c == cTouch && adjacent {
					continue
				}
				return true
			}
			if c != cTouch {
				return true
			}
			add(p, a.ring)
			add(p, b.ring)
			touchPts[p] = true
		}
	}
	// At each touch point, rings must touch, not cross: the directions
	// in which each ring leaves the point must not interleave.
	for p := range touchPts {
		dirs := map[int]map[pt]bool{}
		for _, sg := range segs {
			if !onSegment(sg.a, sg.b, p) {
				continue
			}
			if dirs[sg.ring] == nil {
				dirs[sg.ring] = map[pt]bool{}
			}
			for _, q := range []pt{sg.a, sg.b} {
				if q != p {
					dirs[sg.ring][q] = true
				}
			}
		}
		type d struct {
			q    pt
			ring int
		}
		var all []d
		for r, qs := range dirs {
			for q := range qs {
				all = append(all, d{q, r})
			}
		}
		angle := func(q pt) float64 { return math.Atan2(q.y-p.y, q.x-p.x) }
		sort.Slice(all, func(i, j int) bool { return angle(all[i].q) < angle(all[j].q) })
		for i := range all {
			a, b := all[i], all[(i+1)%len(all)]
			if a.ring != b.ring && orient(p, a.q, b.q) == 0 && (a.q.x-p.x)*(b.q.x-p.x)+(a.q.y-p.y)*(b.q.y-p.y) > 0 {
				return true // two rings leave p in the same direction
			}
		}
		// Parenthesis matching of ring labels around p.
		var stack []int
		for _, e := range all {
			if len(stack) > 0 && stack[len(stack)-1] == e.ring {
				stack = stack[:len(stack)-1]
			} else {
				stack = append(stack, e.ring)
			}
		}
		if len(stack) != 0 {
			return true
		}
	}
	// Bipartite graph of rings and touch points, per polygon: a cycle
	// disconnects the interior.
	parent := map[any]any{}
	var find func(x any) any
	find = func(x any) any {
		if p, ok := parent[x]; ok && p != x {
			r := find(p)
			parent[x] = r
			return r
		}
		parent[x] = x
		return x
	}
	for k, rs := range touches {
		if len(rs) < 2 {
			continue
		}
		for r := range rs {
			a, b := find(r), find(k)
			if a == b {
				return true
			}
			parent[a] = b
		}
	}
	return false
}

// cleanRing drops repeated consecutive vertices, as checkPolygons does.
func cleanRing(ring []pt) []pt {
	var out []pt
	for _, v := range ring {
		if len(out) > 0 && out[len(out)-1] == v {
			continue
		}
		out = append(out, v)
	}
	for len(out) > 1 && out[len(out)-1] == out[0] {
		out = out[:len(out)-1]
	}
	return out
}

// ringsFromBytes turns fuzz input into up to 4 small rings on a 6×6 grid
// (so that collinear points and shared vertices are common), spread over
// up to 2 polygons.
func ringsFromBytes(data []byte) ([][]pt, []int, bool) {
	if len(data) < 1 {
		return nil, nil, false
	}
	nr := int(data[0]%4) + 1
	data = data[1:]
	var rings [][]pt
	var poly []int
	for r := 0; r < nr; r++ {
		if len(data) < 1 {
			return nil, nil, false
		}
		n := int(data[0]%6) + 3
		pol := int(data[0]/6) % 2
		data = data[1:]
		if len(data) < n {
			return nil, nil, false
		}
		var ring []pt
		for _, b := range data[:n] {
			ring = append(ring, pt{float64(b % 6), float64(b / 6 % 6)})
		}
		data = data[n:]
		ring = cleanRing(ring)
		if len(ring) < 3 {
			return nil, nil, false
		}
		if r == 0 {
			pol = 0
		}
		rings = append(rings, ring)
		poly = append(poly, pol)
	}
	// Keep each polygon's rings together, as checkPolygons does.
	var rs [][]pt
	var ps []int
	for want := range 2 {
		for i := range rings {
			if poly[i] == want {
				rs = append(rs, rings[i])
				ps = append(ps, want)
			}
		}
	}
	return rs, ps, true
}

func compareSweep(t *testing.T, rings [][]pt, poly []int) {
	t.Helper()
	s := sweeper{verify: true}
	s.rings, s.poly = rings, poly
	f := s.run()
	got := f != nil
	// The general path, without the shortcuts that rest on what earlier
	// events found, must find exactly the same.
	g := sweeper{general: true}
	g.rings, g.poly = rings, poly
	if fg := g.run(); !reflect.DeepEqual(f, fg) {
		t.Fatalf("sweep fault %+v, general path's %+v, for rings %v (polygons %v)", f, fg, rings, poly)
	}
	if f == nil && !slices.Equal(s.parent, g.parent) {
		t.Fatalf("sweep parents %v, general path's %v, for rings %v", s.parent, g.parent, rings)
	}
	want := naiveFault(rings, poly)
	if got != want {
		t.Fatalf("sweep fault = %v, all-pairs fault = %v for rings %v (polygons %v)", got, want, rings, poly)
	}
	if !got && s.inconsistent != 0 {
		t.Fatalf("sweep status order was inconsistent on valid rings %v", rings)
	}
	if got {
		return
	}
	want2 := naiveParents(rings)
	for r := range rings {
		if s.ccw[r] != ringCCW(rings[r]) {
			t.Fatalf("ring %d: sweep found counterclockwise %v, ringCCW %v, for rings %v", r, s.ccw[r], ringCCW(rings[r]), rings)
		}
		if int(s.parent[r]) != want2[r] {
			t.Fatalf("ring %d: sweep parent %d, all-pairs parent %d, for rings %v", r, s.parent[r], want2[r], rings)
		}
	}
}

// naiveParents returns the innermost ring enclosing each ring (-1 for
// none) of rings that neither cross nor overlap, testing every pair.
func naiveParents(rings [][]pt) []int {
	// Any boundary point of ring i off ring j decides, as the rings do
	// not cross: try the vertices, then the edge midpoints.
	inside := func(i, j int) bool {
		ring := rings[i]
		for k := range 2 * len(ring) {
			v := ring[k/2]
			if k%2 == 1 {
				w := ring[(k/2+1)%len(ring)]
				v = pt{(v.x + w.x) / 2, (v.y + w.y) / 2}
			}
			switch pointInRing(v, rings[j]) {
			case 1:
				return true
			case -1:
				return false
			}
		}
		return false
	}
	parents := make([]int, len(rings))
	depth := make([]int, len(rings))
	for i := range rings {
		for j := range rings {
			if i != j && inside(i, j) {
				depth[i]++
			}
		}
	}
	for i := range rings {
		parents[i] = -1
		for j := range rings {
			if i != j && inside(i, j) && (parents[i] < 0 || depth[j] > depth[parents[i]]) {
				parents[i] = j
			}
		}
	}
	return parents
}

func TestSweepMatchesAllPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 30000
	if testing.Short() {
		n = 3000
	}
	buf := make([]byte, 64)
	for range n {
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
		if rings, poly, ok := ringsFromBytes(buf); ok {
			compareSweep(t, rings, poly)
		}
	}
}

func TestSweepCases(t *testing.T) {
	sq := func(x0, y0, x1, y1 float64) []pt { return []pt{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}} }
	cases := []struct {
		name  string
		rings [][]pt
		poly  []int
		fault string
	}{
		{"square", [][]pt{sq(0, 0, 4, 4)}, []int{0}, ""},
		{"bowtie", [][]pt{{{0, 0}, {2, 2}, {2, 0}, {0, 2}}}, []int{0}, RuleRingSelfIntersection},
		{"vertical edges", [][]pt{{{0, 0}, {0, 4}, {1, 2}}}, []int{0}, ""},
		{"hole touching shell once", [][]pt{sq(0, 0, 4, 4), {{0, 2}, {2, 1}, {2, 3}}}, []int{0, 0}, ""},
		{"hole touching shell twice", [][]pt{sq(0, 0, 4, 4), {{0, 2}, {2, 1}, {4, 2}, {2, 3}}}, []int{0, 0}, RuleInteriorDisconnected},
		{"hole crossing shell", [][]pt{sq(0, 0, 4, 4), sq(2, 2, 6, 3)}, []int{0, 0}, RuleRingIntersection},
		{"hole sharing an edge", [][]pt{sq(0, 0, 4, 4), sq(0, 1, 2, 2)}, []int{0, 0}, RuleRingIntersection},
		{"three holes meeting at one point", [][]pt{sq(0, 0, 10, 10), sq(2, 2, 4, 4), sq(4, 4, 6, 6), {{4, 4}, {3, 6}, {2, 5}}}, []int{0, 0, 0, 0}, ""},
		{"three holes touching in a cycle", [][]pt{sq(0, 0, 10, 10), sq(2, 2, 4, 4), {{4, 3}, {7, 3}, {6, 5}}, {{3, 4}, {6, 5}, {3, 7}}}, []int{0, 0, 0, 0}, RuleInteriorDisconnected},
		{"holes touching twice", [][]pt{sq(0, 0, 10, 10), {{2, 2}, {5, 2}, {5, 5}}, {{2, 2}, {2, 5}, {5, 5}, {3, 3.5}}}, []int{0, 0, 0}, RuleInteriorDisconnected},
		{"self-touching ring", [][]pt{{{0, 0}, {4, 0}, {2, 2}, {4, 4}, {0, 4}, {2, 2}}}, []int{0}, RuleRingSelfIntersection},
		{"spike", [][]pt{{{0, 0}, {4, 0}, {4, 4}, {4, 6}, {4, 4}, {0, 4}}}, []int{0}, RuleRingSelfIntersection},
		{"polygons touching twice", [][]pt{sq(0, 0, 2, 2), {{2, 0}, {4, 1}, {2, 2}, {3, 1}}}, []int{0, 1}, ""},
		{"polygons crossing at shared vertices", [][]pt{sq(0, 0, 4, 4), {{0, 0}, {6, -2}, {4, 4}}}, []int{0, 1}, RuleMultiPolygonOverlap},
		{"polygons crossing", [][]pt{sq(0, 0, 2, 2), sq(1, 1, 3, 3)}, []int{0, 1}, RuleMultiPolygonOverlap},
		{"polygons touching at points", [][]pt{sq(0, 0, 2, 2), {{2, 2}, {4, 2}, {4, 4}}}, []int{0, 1}, ""},
		{"polygons sharing an edge", [][]pt{sq(0, 0, 2, 2), sq(2, 0, 4, 2)}, []int{0, 1}, RuleMultiPolygonOverlap},
		// 1e-17 is below float64 resolution near 1: a float orientation
		// test calls these points collinear.
		{"nearly collinear", [][]pt{{{0, 0}, {1, 1e-300}, {2, 0}, {1, 1}}}, []int{0}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s sweeper
			s.rings, s.poly = c.rings, c.poly
			f := s.run()
			got := ""
			if f != nil {
				got = f.rule
			}
			if got != c.fault {
				t.Errorf("fault = %q (%+v), want %q", got, f, c.fault)
			}
			if want := naiveFault(c.rings, c.poly); want != (c.fault != "") {
				t.Errorf("all-pairs reference disagrees with the expected result: fault %v", want)
			}
		})
	}
}

func FuzzSweep(f *testing.F) {
	f.Add([]byte{0, 1, 0, 5, 35, 30})
	f.Add([]byte{1, 1, 0, 14, 35, 21, 2, 7, 9, 27, 25})
	f.Add([]byte{2, 3, 0, 5, 35, 30, 8, 9, 15, 14, 20, 9, 10, 16, 15})
	f.Add([]byte{3, 9, 0, 1, 2, 3, 4, 5, 6, 7, 3, 8, 9, 10, 4, 11, 12, 13, 14, 15, 16})
	f.Fuzz(func(t *testing.T, data []byte) {
		rings, poly, ok := ringsFromBytes(data)
		if !ok {
			return
		}
		compareSweep(t, rings, poly)
	})
}

func TestSortEvents(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{10, 300, 5000} {
		var s sweeper
		for i := range n {
			var p pt
			switch rng.IntN(3) {
			case 0:
				p = pt{float64(rng.IntN(20) - 10), float64(rng.IntN(5))}
			case 1:
				p = pt{rng.NormFloat64() * 100, rng.Float64()}
			default:
				p = pt{math.Copysign(0, -1), rng.NormFloat64()}
			}
			s.evs = append(s.evs, mkEvent(p, int32(i), 0))
		}
		want := append([]event(nil), s.evs...)
		sortEventsCmp(want)
		s.sortEvents()
		for i := range want {
			if want[i].p != s.evs[i].p {
				t.Fatalf("n=%d: position %d: got %v, want %v", n, i, s.evs[i].p, want[i].p)
			}
		}
	}
}

// checkStatus checks the sweep status against want, the segments it
// should hold in order: the block tree's AVL invariants and in-order
// sequence, the block list, every segment's slot, next and prev, and the
// bound on the number of blocks for inserted insertions.
func checkStatus(t *testing.T, s *sweeper, want []int32, inserted int) {
	t.Helper()
	var check func(x int32) int32
	var inorder []int32
	check = func(x int32) int32 {
		if x == nilNode {
			return 0
		}
		l, r := s.nodes[x].l, s.nodes[x].r
		for _, c := range []int32{l, r} {
			if c != nilNode && s.nodes[c].par != x {
				t.Fatalf("block %d: child %d has parent %d", x, c, s.nodes[c].par)
			}
		}
		hl := check(l)
		inorder = append(inorder, x)
		hr := check(r)
		if hl-hr > 1 || hr-hl > 1 || s.nodes[x].h != 1+max(hl, hr) {
			t.Fatalf("block %d: heights %d, %d, stored %d", x, hl, hr, s.nodes[x].h)
		}
		return s.nodes[x].h
	}
	if h := check(s.root); float64(h) > 1.45*math.Log2(float64(len(inorder))+2) {
		t.Fatalf("block tree height %d for %d blocks", h, len(inorder))
	}
	if len(inorder) > 1+2*inserted/blockCap {
		t.Fatalf("%d blocks after %d insertions", len(inorder), inserted)
	}
	var got []int32
	prevB := int32(nilNode)
	for i, b := 0, s.head; b != nilNode; i, b = i+1, s.nodes[b].next {
		if i >= len(inorder) || inorder[i] != b {
			t.Fatalf("block list and block tree disagree at block %d", i)
		}
		if s.nodes[b].prev != prevB {
			t.Fatalf("block %d: prev %d, want %d", b, s.nodes[b].prev, prevB)
		}
		if n := s.nodes[b].n; n < 1 || n > blockCap {
			t.Fatalf("block %d holds %d segments", b, n)
		}
		for j, x := range s.items(b) {
			if s.at[x] != (slot{b, s.nodes[b].off + int32(j)}) {
				t.Fatalf("segment %d at %v, want %v", x, s.at[x], slot{b, s.nodes[b].off + int32(j)})
			}
			got = append(got, x)
		}
		prevB = b
	}
	if len(got) != len(want) {
		t.Fatalf("%d segments in the status, want %d", len(got), len(want))
	}
	for i, x := range want {
		if got[i] != x {
			t.Fatalf("position %d holds %d, want %d", i, got[i], x)
		}
		if p := s.prev(x); (i == 0) != (p == nilNode) || (i > 0 && p != want[i-1]) {
			t.Fatalf("prev(%d) = %d", x, p)
		}
		if n := s.next(x); (i == len(want)-1) != (n == nilNode) || (i < len(want)-1 && n != want[i+1]) {
			t.Fatalf("next(%d) = %d", x, n)
		}
	}
	if (len(want) == 0) != (s.first() == nilNode) || (len(want) > 0 && s.first() != want[0]) {
		t.Fatalf("first() = %d", s.first())
	}
	in := make([]bool, len(s.at))
	for _, x := range want {
		in[x] = true
	}
	for x := range s.at {
		if s.active(int32(x)) != in[x] {
			t.Fatalf("segment %d: active %v", x, s.active(int32(x)))
		}
	}
}

// TestStatusBalanced checks the sweep status under sorted insertions (the
// worst case for an unbalanced tree) and removals.
func TestStatusBalanced(t *testing.T) {
	const n = 5000
	var s sweeper
	for i := range n {
		s.segs = append(s.segs, seg{a: pt{0, float64(i)}, b: pt{1, float64(i)}})
	}
	s.resetStatus(n)
	var want []int32
	after := int32(nilNode)
	for i := range int32(n) {
		s.insertAfter(i, after)
		after = i
		want = append(want, i)
	}
	checkStatus(t, &s, want, n)
	want = want[:0]
	for i := int32(0); i < n; i++ {
		if i%2 == 0 {
			s.remove(i)
		} else {
			want = append(want, i)
		}
	}
	checkStatus(t, &s, want, n)
	for _, x := range want {
		s.remove(x)
	}
	checkStatus(t, &s, nil, n)
	if s.root != nilNode || s.head != nilNode {
		t.Fatal("status not empty after removing everything")
	}
}

// TestStatusRandom checks the sweep status against a slice under random
// insertions (after a random segment, or first), removals, replacements
// and searches.
func TestStatusRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 20 {
		n := 50 + rng.IntN(3000)
		var s sweeper
		// Horizontal segments at distinct heights, so the order is by y.
		ys := rng.Perm(n)
		for i := range n {
			s.segs = append(s.segs, seg{a: pt{0, float64(ys[i])}, b: pt{1, float64(ys[i])}})
		}
		s.resetStatus(n)
		var want []int32
		var idle []int32
		for i := range int32(n) {
			idle = append(idle, i)
		}
		inserted := 0
		for step := range 4 * n {
			switch op := rng.IntN(10); {
			case op < 5 && len(idle) > 0: // insert at its place by search
				k := rng.IntN(len(idle))
				x := idle[k]
				idle = slices.Delete(idle, k, k+1)
				s.insertSearch(x)
				j, _ := slices.BinarySearchFunc(want, x, func(a, b int32) int { return cmp.Compare(ys[a], ys[b]) })
				want = slices.Insert(want, j, x)
				inserted++
			case op < 8 && len(want) > 0: // remove
				j := rng.IntN(len(want))
				s.remove(want[j])
				idle = append(idle, want[j])
				want = slices.Delete(want, j, j+1)
			case len(want) > 0 && len(idle) > 0: // locate, then replace
				j := rng.IntN(len(want))
				x := want[j]
				p := pt{0.5, float64(ys[x])}
				on, below, above := s.locate(p, nil)
				wantBelow, wantAbove := int32(nilNode), int32(nilNode)
				if j > 0 {
					wantBelow = want[j-1]
				}
				if j < len(want)-1 {
					wantAbove = want[j+1]
				}
				if len(on) != 1 || on[0] != x || below != wantBelow || above != wantAbove {
					t.Fatalf("round %d step %d: locate(%v) = %v, %d, %d, want [%d], %d, %d", round, step, p, on, below, above, x, wantBelow, wantAbove)
				}
				// y takes x's place only when the order allows it: swap
				// their heights.
				k := rng.IntN(len(idle))
				y := idle[k]
				if (j == 0 || ys[y] > ys[want[j-1]]) && (j == len(want)-1 || ys[y] < ys[want[j+1]]) {
					s.replace(x, y)
					idle[k] = x
					want[j] = y
				}
			}
			if step%97 == 0 {
				checkStatus(t, &s, want, inserted)
			}
		}
		checkStatus(t, &s, want, inserted)
	}
}

// TestStatusRuns checks the sweep status against a slice under random
// insertions and removals of runs of consecutive segments, which need no
// geometry.
func TestStatusRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 20 {
		n := 50 + rng.IntN(3000)
		var s sweeper
		s.resetStatus(n)
		var want, idle []int32
		for i := range int32(n) {
			idle = append(idle, i)
		}
		inserted := 0
		for step := range 4 * n {
			k := 1 + rng.IntN(4)
			if rng.IntN(2) == 0 && len(idle) >= k {
				j := rng.IntN(len(want) + 1) // the run goes at want[j:]
				after := int32(nilNode)
				if j > 0 {
					after = want[j-1]
				}
				xs := slices.Clone(idle[len(idle)-k:])
				idle = idle[:len(idle)-k]
				s.insertRun(xs, after)
				want = slices.Insert(want, j, xs...)
				inserted += k
			} else if len(want) >= k {
				j := rng.IntN(len(want) - k + 1)
				s.removeRun(want[j : j+k])
				idle = append(idle, want[j:j+k]...)
				want = slices.Delete(want, j, j+k)
			}
			if step%89 == 0 {
				checkStatus(t, &s, want, inserted)
			}
		}
		checkStatus(t, &s, want, inserted)
	}
}

// TestSweepLargeRings compares the sweep with the all-pairs reference and
// with its general path (compareSweep) on rings long enough for the
// merge of monotone runs in sortEvents: circles and stars of 64 to 400
// vertices rounded to a coarse grid (collinear runs, shared vertices),
// some with a vertex moved anywhere, alone or with a second ring that
// may touch, cross or nest in the first.
func TestSweepLargeRings(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	ring := func(n int, cx, cy, r float64, star bool, grid float64) []pt {
		var out []pt
		for k := range n {
			rr := r
			if star && k%2 == 1 {
				rr = 0.8 * r
			}
			a := 2 * math.Pi * float64(k) / float64(n)
			out = append(out, pt{math.Round((cx+rr*math.Cos(a))*grid) / grid, math.Round((cy+rr*math.Sin(a))*grid) / grid})
		}
		if rng.IntN(3) == 0 {
			k := rng.IntN(n)
			out[k] = pt{math.Round((cx+(rng.Float64()*2-1)*r)*grid) / grid, math.Round((cy+(rng.Float64()*2-1)*r)*grid) / grid}
		}
		return cleanRing(out)
	}
	n := 300
	if testing.Short() {
		n = 60
	}
	for range n {
		grid := []float64{1, 4, 1e6}[rng.IntN(3)]
		rings := [][]pt{ring(64+rng.IntN(336), 0, 0, 20, rng.IntN(2) == 0, grid)}
		poly := []int{0}
		if rng.IntN(2) == 0 {
			r := 2 + rng.Float64()*25
			rings = append(rings, ring(64+rng.IntN(100), (rng.Float64()*2-1)*20, (rng.Float64()*2-1)*20, r, rng.IntN(2) == 0, grid))
			poly = append(poly, rng.IntN(2))
		}
		if len(rings[len(rings)-1]) < 3 || len(rings[0]) < 3 {
			continue
		}
		compareSweep(t, rings, poly)
	}
}

func TestMergeRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{64, 100, 1000, 5000} {
		for _, runs := range []int{1, 2, 3, 7, n / 16, n/16 + 1, n / 4} {
			if runs < 1 {
				continue
			}
			var s sweeper
			// runs monotone runs, rising or falling, over few x values
			// (ties between runs, and -0 against 0).
			for r := range runs {
				m := n / runs
				if r == runs-1 {
					m = n - len(s.evs)
				}
				x := float64(rng.IntN(50)) - 25
				step := 1.0
				if rng.IntN(2) == 0 {
					step = -1
				}
				for i := range m {
					p := pt{x, float64(rng.IntN(3))}
					if p.x == 0 && i%2 == 0 {
						p.x = math.Copysign(0, -1)
					}
					if len(s.evs) > 0 && lessEvent(event{p: p}, s.evs[len(s.evs)-1]) != (step < 0) && i > 0 {
						x += step
						p.x = x
					}
					s.evs = append(s.evs, mkEvent(p, int32(len(s.evs)), 0))
					x += step
				}
			}
			want := append([]event(nil), s.evs...)
			sortEventsCmp(want)
			s.sortEvents()
			if len(s.evs) != n {
				t.Fatalf("n=%d runs=%d: %d events after sorting", n, runs, len(s.evs))
			}
			seen := make([]bool, n)
			for i := range want {
				if want[i].p != s.evs[i].p {
					t.Fatalf("n=%d runs=%d: position %d: got %v, want %v", n, runs, i, s.evs[i].p, want[i].p)
				}
				if seen[s.evs[i].id()] {
					t.Fatalf("n=%d runs=%d: event %d twice", n, runs, s.evs[i].id())
				}
				seen[s.evs[i].id()] = true
			}
		}
	}
}

// ringCCW is the reference for sweeper.ccw: it reports whether a simple
// ring is counterclockwise, exactly: the turn at its lexicographically
// smallest vertex, which is convex.
func ringCCW(ring []pt) bool {
	m := 0
	for i, v := range ring {
		if less(v, ring[m]) {
			m = i
		}
	}
	n := len(ring)
	return orient(ring[(m+n-1)%n], ring[m], ring[(m+1)%n]) > 0
}
