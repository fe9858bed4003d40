package geojson

import (
	"github.com/twpayne/go-geom"
)

// Document is a valid GeoJSON document decoded once, without copying its
// text: what [DecodeDocument] and [RequestValidator.DecodeRequest] return,
// and what the idempotency middleware hands to the handler.
//
// Every []byte in a Document is a sub-slice of the input (capped, so that
// appending to it never writes into the input): keep the input unchanged
// while the Document is in use, and copy what must outlive it.
type Document struct {
	// Type is the root object's "type": "Feature", "FeatureCollection" or
	// a geometry type.
	Type string
	// Features are the features of a FeatureCollection in order, the
	// single Feature of a Feature, or, for a bare geometry, one feature
	// holding it with a nil ID and nil Properties.
	Features []RawFeature
	// BBox is the root object's "bbox", or nil.
	BBox []float64
}

// RawFeature is one Feature of a [Document].
type RawFeature struct {
	// ID is the Feature's "id" exactly as written: nil when absent, a
	// string (escapes resolved), or a json.Number holding the number's
	// text as in the input ("12.50" stays "12.50"). Member names match
	// with exact case: "ID" or "Id" is a foreign member, never the id.
	ID any
	// Geometry is the Feature's geometry as a go-geom value
	// (*geom.Point, *geom.LineString, *geom.Polygon, *geom.MultiPoint,
	// *geom.MultiLineString, *geom.MultiPolygon or
	// *geom.GeometryCollection), its positions in one backing array shared
	// with the document's other geometries, each capped so that appending
	// to one never affects another: layout geom.XY or geom.XYZ, Z (and M, see
	// [Options.AllowExtraDimensions]) kept as written (a
	// GeometryCollection's members keep their own layouts, so a collection
	// may mix 2D and 3D); nil when "geometry" is null. A geometry with an
	// empty "coordinates" array is an empty go-geom geometry: its Empty
	// method reports true.
	Geometry geom.T
	// Properties is the "properties" value as in the input: "null" or a
	// JSON object, never decoded (json.Unmarshal it into a type of your
	// own). Nil for a bare geometry.
	Properties []byte
	// Raw is the whole Feature object as in the input, from its '{' to
	// its '}', foreign members and escapes (\u0000 included) byte for
	// byte; for a bare geometry, the geometry object.
	Raw []byte
	// BBox is the Feature's "bbox", or nil.
	BBox []float64
}

// DecodeDocument validates data exactly as [Validate] does and, only when
// it is valid, returns it as a [Document]. Properties are left as the input's bytes:
// cheaper than decoding them into maps, and exact, since nothing is
// re-encoded. The errors are those of Validate; on error the Document is
// nil.
func DecodeDocument(data []byte, opts Options) (*Document, error) {
	p, err := parse(data, opts, buildSpans)
	defer p.release()
	if err != nil {
		return nil, err
	}
	doc := &Document{BBox: p.rootBB}
	if p.rootGeo != nil {
		doc.Type = p.rootGeo.typ.String()
		raw := trimJSONSpace(data)
		doc.Features = []RawFeature{{Geometry: p.geometry(p.rootGeo), Raw: raw[:len(raw):len(raw)]}}
		return doc, nil
	}
	doc.Type = tFeatureCollection.String()
	if p.rootFeature {
		doc.Type = tFeature.String()
	}
	doc.Features = make([]RawFeature, len(p.feats))
	for i, f := range p.feats {
		doc.Features[i] = RawFeature{ID: f.id, Properties: f.rawProps, Raw: f.raw, BBox: f.bbox}
		if f.geom != nil {
			doc.Features[i].Geometry = p.geometry(f.geom)
		}
	}
	return doc, nil
}

func trimJSONSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
