package geojson

// number numbers the rings depth-first over the parent forest that run
// left in s.parent, in O(rings) steps, for encloses.
func (s *sweeper) number() {
	n := len(s.rings)
	s.child, s.sibl = fill(s.child, n, nilNode), fill(s.sibl, n, nilNode)
	s.tin, s.tout = fill(s.tin, n, 0), fill(s.tout, n, 0)
	for r := n - 1; r >= 0; r-- {
		if par := s.parent[r]; par >= 0 {
			s.sibl[r] = s.child[par]
			s.child[par] = int32(r)
		}
	}
	clock := int32(0)
	for root := range int32(n) {
		if s.parent[root] >= 0 {
			continue
		}
		// Each ring is pushed once; next holds, for each ring on the
		// stack, its next child to visit.
		s.stack = append(s.stack[:0], root)
		s.tin[root] = clock
		clock++
		next := append(s.kids[:0], s.child[root]) // parallel to stack
		for len(s.stack) > 0 {
			top := len(s.stack) - 1
			c := next[top]
			if c == nilNode {
				s.tout[s.stack[top]] = clock
				clock++
				s.stack, next = s.stack[:top], next[:top]
				continue
			}
			next[top] = s.sibl[c]
			s.tin[c] = clock
			clock++
			s.stack = append(s.stack, c)
			next = append(next, s.child[c])
		}
		s.kids = next
	}
}

// encloses reports whether ring a is d or encloses it (is an ancestor of d
// in the parent forest), after number.
func (s *sweeper) encloses(a, d int32) bool {
	return s.tin[a] <= s.tin[d] && s.tout[d] <= s.tout[a]
}

// fill returns buf resized to n elements, all v.
func fill(buf []int32, n int, v int32) []int32 {
	buf = buf[:0]
	for range n {
		buf = append(buf, v)
	}
	return buf
}
