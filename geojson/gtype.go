package geojson

// This file holds the GeoJSON type table: the types' names, what each
// one holds, and their lookup.

// gtype is a GeoJSON type.
type gtype uint8

const (
	tNone gtype = iota
	tPoint
	tMultiPoint
	tLineString
	tMultiLineString
	tPolygon
	tMultiPolygon
	tGeometryCollection
	tFeature
	tFeatureCollection
	tUnknown
)

var typeNames = [...]string{"", "Point", "MultiPoint", "LineString", "MultiLineString",
	"Polygon", "MultiPolygon", "GeometryCollection", "Feature", "FeatureCollection", ""}

func (t gtype) String() string { return typeNames[t] }

// hasCoordinates reports whether t is a geometry with "coordinates".
func (t gtype) hasCoordinates() bool { return t >= tPoint && t <= tMultiPolygon }

func (t gtype) isGeometry() bool { return t >= tPoint && t <= tGeometryCollection }

// level is the array nesting of t's coordinates above the positions.
func (t gtype) level() int {
	switch t {
	case tMultiPoint, tLineString:
		return 1
	case tPolygon, tMultiLineString:
		return 2
	case tMultiPolygon:
		return 3
	}
	return 0
}

func lookupType(s []byte) gtype {
	switch string(s) {
	case "Point":
		return tPoint
	case "MultiPoint":
		return tMultiPoint
	case "LineString":
		return tLineString
	case "MultiLineString":
		return tMultiLineString
	case "Polygon":
		return tPolygon
	case "MultiPolygon":
		return tMultiPolygon
	case "GeometryCollection":
		return tGeometryCollection
	case "Feature":
		return tFeature
	case "FeatureCollection":
		return tFeatureCollection
	}
	return tUnknown
}

func equalFold(a string, b []byte) bool {
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
