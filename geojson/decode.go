package geojson

import (
	"github.com/twpayne/go-geom"
)

// Validate checks that data is one valid GeoJSON object (RFC 7946, with
// the additional rules described in the package documentation) and
// reports every problem found, up to opts.MaxProblems.
//
// It returns nil when data is valid, a *[SyntaxError] when data is not
// JSON at all, and a *[ValidationError] listing the problems otherwise.
// A limit in opts that is exceeded stops the check with a single
// limit problem. Validate never panics and allocates memory proportional
// to len(data).
func Validate(data []byte, opts Options) error {
	p, err := parse(data, opts, buildNone)
	p.release()
	return err
}

// geometry builds the go-geom value of an accepted geometry, whose
// positions stay in the arena: the parser gives the arena up.
func (p *parser) geometry(g *gnode) geom.T {
	p.arenaGiven = true
	if g.typ == tGeometryCollection {
		gc := geom.NewGeometryCollection()
		for _, c := range g.children {
			// Push only fails on layout mismatches, which plain
			// GeometryCollections (NoLayout) never have.
			_ = gc.Push(p.geometry(c))
		}
		return gc
	}
	layout := geom.XY
	switch g.stride {
	case 3:
		layout = geom.XYZ
	case 4:
		layout = geom.XYZM
	}
	end := g.start + g.npos*g.stride
	flat := p.arena[g.start:end:end]
	scale := func(ends []int) []int {
		out := make([]int, len(ends))
		for i, e := range ends {
			out[i] = e * g.stride
		}
		return out
	}
	switch g.typ {
	case tPoint:
		return geom.NewPointFlat(layout, flat)
	case tMultiPoint:
		return geom.NewMultiPointFlat(layout, flat)
	case tLineString:
		return geom.NewLineStringFlat(layout, flat)
	case tMultiLineString:
		return geom.NewMultiLineStringFlat(layout, flat, scale(g.ends))
	case tPolygon:
		return geom.NewPolygonFlat(layout, flat, scale(g.ends))
	case tMultiPolygon:
		endss := make([][]int, len(g.polyEnds))
		r0 := 0
		for k, r1 := range g.polyEnds {
			endss[k] = scale(g.ends[r0:r1])
			r0 = r1
		}
		return geom.NewMultiPolygonFlat(layout, flat, endss)
	}
	return nil
}
