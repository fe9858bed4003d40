package geojson

// This file holds the detection of duplicate member names.

// dupSet detects duplicate member names in one object: a linear scan of
// the shared names stack for small objects, a map beyond that.
type dupSet struct {
	mark int
	m    map[string]struct{}
}

const dupLinearMax = 16

// seen records name and reports whether the object already had it.
func (p *parser) seen(s *dupSet, name []byte) bool {
	if s.m != nil {
		if _, ok := s.m[string(name)]; ok {
			return true
		}
		s.m[string(name)] = struct{}{}
		return false
	}
	names := p.names[s.mark:]
	for _, n := range names {
		if string(n) == string(name) {
			return true
		}
	}
	if len(names) >= dupLinearMax {
		s.m = make(map[string]struct{}, 2*dupLinearMax)
		for _, n := range names {
			s.m[string(n)] = struct{}{}
		}
		s.m[string(name)] = struct{}{}
		return false
	}
	p.names = append(p.names, name)
	return false
}

func (p *parser) endDup(s *dupSet) { p.names = p.names[:s.mark] }
