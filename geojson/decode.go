package geojson

import (
	"github.com/twpayne/go-geom"
)

// Feature is a decoded GeoJSON Feature.
type Feature struct {
	// ID is the Feature's "id": nil when absent, a string, or a
	// json.Number holding the number exactly as written.
	ID any
	// Geometry is the Feature's geometry as a go-geom value (*geom.Point,
	// *geom.LineString, *geom.Polygon, *geom.MultiPoint,
	// *geom.MultiLineString, *geom.MultiPolygon or
	// *geom.GeometryCollection), with layout geom.XY or geom.XYZ (or
	// geom.XYZM, see [Options.AllowExtraDimensions]); nil when "geometry"
	// is null.
	Geometry geom.T
	// Properties is the Feature's "properties" as encoding/json would
	// decode it into a map[string]any (numbers as float64); nil when
	// "properties" is null.
	Properties map[string]any
	// BBox is the Feature's "bbox", or nil.
	BBox []float64
}

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

// Decode validates data exactly as [Validate] does and, only when it is
// valid, returns its Features: all the features of a FeatureCollection
// in order, the single Feature of a Feature, or, for a bare geometry, one
// Feature holding it with nil ID and Properties.
//
// The FeatureCollection's own bbox and all foreign members are not
// returned. The errors are those of Validate; on error the slice is nil. Position
// data of the returned geometries shares one backing array, each
// geometry's slice capped so that appending to it never affects another.
func Decode(data []byte, opts Options) ([]Feature, error) {
	p, err := parse(data, opts, buildMaps)
	defer p.release()
	if err != nil {
		return nil, err
	}
	if p.rootGeo != nil {
		return []Feature{{Geometry: p.geometry(p.rootGeo), BBox: p.rootBB}}, nil
	}
	out := make([]Feature, len(p.feats))
	for i, f := range p.feats {
		out[i] = Feature{ID: f.id, Properties: f.props, BBox: f.bbox}
		if f.geom != nil {
			out[i].Geometry = p.geometry(f.geom)
		}
	}
	return out, nil
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
