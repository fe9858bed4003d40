package geojson

// This file holds the union-find over rings and touch points with which
// the sweep finds a polygon whose ring touches disconnect its interior.

func (s *sweeper) find(x int32) int32 {
	for s.uf[x] != x {
		s.uf[x] = s.uf[s.uf[x]]
		x = s.uf[x]
	}
	return x
}

// union joins a and b and reports whether they were already joined.
func (s *sweeper) union(a, b int32) bool {
	a, b = s.find(a), s.find(b)
	if a == b {
		return true
	}
	s.uf[a] = b
	return false
}
