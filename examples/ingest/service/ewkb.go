package service

import (
	"encoding/binary"
	"fmt"

	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/ewkb"
)

// ewkbOf encodes a decoded geometry for PostGIS. A GeometryCollection whose
// members have different layouts (2D and 3D, say) is sent with every
// member in the collection's widest layout, the missing Z (or M) as 0, as
// PostGIS's own ST_GeomFromGeoJSON does, since PostGIS refuses a
// collection of mixed dimensions ("Dimensions mismatch in lwcollection").
func ewkbOf(g geom.T) ([]byte, error) {
	if gc, ok := g.(*geom.GeometryCollection); ok {
		var err error
		if g, err = toLayout(gc, gc.Layout()); err != nil {
			return nil, err
		}
	}
	b, err := ewkb.Marshal(g, binary.LittleEndian)
	if err != nil {
		return nil, fmt.Errorf("encoding a %T as EWKB: %w", g, err)
	}
	return b, nil
}

// toLayout returns g in layout l, which is g's own or wider (XY to XYZ or
// XYZM, XYZ to XYZM): g itself when it already has it, else a copy with the
// added ordinates 0.
func toLayout(g geom.T, l geom.Layout) (geom.T, error) {
	if gc, ok := g.(*geom.GeometryCollection); ok {
		out := geom.NewGeometryCollection()
		for _, m := range gc.Geoms() {
			w, err := toLayout(m, l)
			if err != nil {
				return nil, err
			}
			if err := out.Push(w); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	from, to := g.Stride(), l.Stride()
	if g.Layout() == l || l == geom.NoLayout || to < from || (from == 3 && g.Layout() != geom.XYZ) {
		return g, nil
	}
	flat := g.FlatCoords()
	wide := make([]float64, 0, len(flat)/from*to)
	for i := 0; i+from <= len(flat); i += from {
		wide = append(wide, flat[i:i+from]...)
		for range to - from {
			wide = append(wide, 0)
		}
	}
	scale := func(ends []int) []int {
		out := make([]int, len(ends))
		for i, e := range ends {
			out[i] = e / from * to
		}
		return out
	}
	switch g := g.(type) {
	case *geom.Point:
		if g.Empty() {
			return geom.NewPointEmpty(l), nil
		}
		return geom.NewPointFlat(l, wide), nil
	case *geom.MultiPoint:
		return geom.NewMultiPointFlat(l, wide), nil
	case *geom.LineString:
		return geom.NewLineStringFlat(l, wide), nil
	case *geom.MultiLineString:
		return geom.NewMultiLineStringFlat(l, wide, scale(g.Ends())), nil
	case *geom.Polygon:
		return geom.NewPolygonFlat(l, wide, scale(g.Ends())), nil
	case *geom.MultiPolygon:
		endss := make([][]int, len(g.Endss()))
		for i, ends := range g.Endss() {
			endss[i] = scale(ends)
		}
		return geom.NewMultiPolygonFlat(l, wide, endss), nil
	}
	return nil, fmt.Errorf("unsupported geometry %T", g)
}
