package service

import (
	"testing"

	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/ewkb"
)

// A collection mixing 2D, 3D and XYZM members is encoded with every member
// widened to the collection's layout, the added ordinates 0.
func TestEWKBWidensMixedCollections(t *testing.T) {
	gc := geom.NewGeometryCollection()
	for _, m := range []geom.T{
		geom.NewPointFlat(geom.XY, []float64{1, 2}),
		geom.NewPolygonFlat(geom.XYZ, []float64{0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1}, []int{12}),
		geom.NewLineStringFlat(geom.XYZM, []float64{0, 0, 5, 9, 1, 1, 6, 8}),
		geom.NewPointEmpty(geom.XY),
	} {
		if err := gc.Push(m); err != nil {
			t.Fatal(err)
		}
	}
	b, err := ewkbOf(gc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ewkb.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	got := back.(*geom.GeometryCollection)
	want := [][]float64{{1, 2, 0, 0}, {0, 0, 1, 0, 1, 0, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0}, {0, 0, 5, 9, 1, 1, 6, 8}, {}}
	for i, g := range got.Geoms() {
		if g.Layout() != geom.XYZM || !sameFloats(g.FlatCoords(), want[i]) {
			t.Errorf("member %d: %v %v, want XYZM %v", i, g.Layout(), g.FlatCoords(), want[i])
		}
	}
	if p := got.Geom(1).(*geom.Polygon); p.Ends()[0] != 16 {
		t.Errorf("polygon ends %v, want [16]", p.Ends())
	}
}

func sameFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
