package geojson_test

import (
	"fmt"

	"github.com/geoidem/geoidem/geojson"
)

func ExampleDecodeDocument() {
	body := []byte(`{"type":"FeatureCollection","features":[
	  {"type":"Feature","id":12.50,"geometry":{"type":"LineString","coordinates":[[0,0,10],[1,1,12]]},"properties":null},
	  {"type":"Feature","id":"e","geometry":{"type":"MultiPolygon","coordinates":[]},"properties":{"n":1}}]}`)
	doc, err := geojson.DecodeDocument(body, geojson.Options{})
	if err != nil {
		panic(err)
	}
	for _, f := range doc.Features {
		fmt.Printf("%v: %T %v empty=%v raw=%d bytes\n", f.ID, f.Geometry, f.Geometry.Layout(), f.Geometry.Empty(), len(f.Raw))
	}
	// Output:
	// 12.50: *geom.LineString XYZ empty=false raw=114 bytes
	// e: *geom.MultiPolygon XY empty=true raw=100 bytes
}
