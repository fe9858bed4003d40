package geojson_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/geoidem/geoidem/geojson"
	"github.com/twpayne/go-geom"
)

func ExampleValidate() {
	body := []byte(`{"type":"Feature","properties":null,"geometry":
	  {"type":"Polygon","coordinates":[[[0,0],[2,2],[2,0],[0,2],[0,0]]]}}`)
	err := geojson.Validate(body, geojson.Options{})
	var verr *geojson.ValidationError
	if errors.As(err, &verr) {
		for _, p := range verr.Violations {
			fmt.Println(p)
		}
	}
	// Output:
	// /geometry/coordinates/0/2: ring-self-intersection: the ring crosses itself
}

// A feature's properties are the input's bytes: decode them into a type
// of your own.
func ExampleDecodeDocument_properties() {
	body := []byte(`{"type":"FeatureCollection","features":[
	  {"type":"Feature","id":1,"properties":{"name":"square"},
	   "geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]]]}}]}`)
	doc, err := geojson.DecodeDocument(body, geojson.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range doc.Features {
		var props struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(f.Properties, &props); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(f.ID, props.Name, f.Geometry.(*geom.Polygon).Area())
	}
	// Output:
	// 1 square 1
}
