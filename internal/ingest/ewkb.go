package ingest

import (
	"encoding/binary"
	"fmt"

	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/ewkb"
)

// ewkbOf encodes a decoded geometry for PostGIS. A GeometryCollection that
// mixes 2D and 3D members is sent with its 2D members given a Z of 0, as
// PostGIS's own ST_GeomFromGeoJSON does, since PostGIS refuses a collection
// of mixed dimensions ("Dimensions mismatch in lwcollection").
func ewkbOf(g geom.T) ([]byte, error) {
	if gc, ok := g.(*geom.GeometryCollection); ok && gc.Layout() == geom.XYZ {
		var err error
		if g, err = withZ(gc); err != nil {
			return nil, err
		}
	}
	b, err := ewkb.Marshal(g, binary.LittleEndian)
	if err != nil {
		return nil, fmt.Errorf("encoding a %T as EWKB: %w", g, err)
	}
	return b, nil
}

// withZ returns g with layout XYZ: g itself when it has it, else a copy
// whose positions have a Z of 0.
func withZ(g geom.T) (geom.T, error) {
	if gc, ok := g.(*geom.GeometryCollection); ok {
		out := geom.NewGeometryCollection()
		for _, m := range gc.Geoms() {
			z, err := withZ(m)
			if err != nil {
				return nil, err
			}
			if err := out.Push(z); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if g.Layout() == geom.XYZ || g.Stride() != 2 {
		return g, nil
	}
	flat := g.FlatCoords()
	z := make([]float64, 0, len(flat)/2*3)
	for i := 0; i+1 < len(flat); i += 2 {
		z = append(z, flat[i], flat[i+1], 0)
	}
	scale := func(ends []int) []int {
		out := make([]int, len(ends))
		for i, e := range ends {
			out[i] = e / 2 * 3
		}
		return out
	}
	switch g := g.(type) {
	case *geom.Point:
		if g.Empty() {
			return geom.NewPointEmpty(geom.XYZ), nil
		}
		return geom.NewPointFlat(geom.XYZ, z), nil
	case *geom.MultiPoint:
		return geom.NewMultiPointFlat(geom.XYZ, z), nil
	case *geom.LineString:
		return geom.NewLineStringFlat(geom.XYZ, z), nil
	case *geom.MultiLineString:
		return geom.NewMultiLineStringFlat(geom.XYZ, z, scale(g.Ends())), nil
	case *geom.Polygon:
		return geom.NewPolygonFlat(geom.XYZ, z, scale(g.Ends())), nil
	case *geom.MultiPolygon:
		endss := make([][]int, len(g.Endss()))
		for i, ends := range g.Endss() {
			endss[i] = scale(ends)
		}
		return geom.NewMultiPolygonFlat(geom.XYZ, z, endss), nil
	}
	return nil, fmt.Errorf("unsupported geometry %T", g)
}
