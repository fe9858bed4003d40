// Package geojson validates and decodes RFC 7946 GeoJSON into
// [github.com/twpayne/go-geom] geometries, strictly and fast enough to sit
// in front of every request.
//
// [Validate] reports every problem of a document (up to a cap), each with
// an RFC 6901 JSON pointer to the offending value, a stable rule id (the
// Rule constants) and a message. [DecodeDocument] runs the same parse
// and, only for a valid document, returns a [Document]: its features'
// go-geom geometries, ids and bboxes, with their properties and raw bytes
// as sub-slices of the input, never copied or re-encoded (decode the
// properties into a type of your own with encoding/json). Malformed JSON is a
// [*SyntaxError]; well-formed JSON that is not valid GeoJSON is a
// [*ValidationError]. [RequestValidator] plugs both into the idempotency
// middleware, which answers them 400 and 422 with RFC 9457 problem
// documents (and 415 for another Content-Type).
//
// # Parsing
//
// The input is read in a single hand-written pass: encoding/json is not
// used, because it is slow, allocates heavily, and matches member names
// case-insensitively. Limits on size, nesting depth, number of positions
// and GeometryCollection nesting ([Options]) are enforced while parsing,
// so hostile input costs time and memory linear in its length (memory is a
// small multiple of the input: positions are stored once, as float64s,
// and the returned geometries share that storage). The parser never
// panics on any input. A "coordinates" member that precedes "type" is
// skipped and parsed again once the type is known, so no byte is parsed
// more than twice.
//
// # Rules
//
// Beyond the JSON grammar (RFC 8259) the package checks:
//
//   - I-JSON (RFC 7493): strings are valid UTF-8 without unpaired
//     surrogate escapes, and no object repeats a member name, anywhere in
//     the document, properties and foreign members included.
//   - Member names and type names match with exact case.
//   - Object structure: "type" present and one of the nine types; a
//     Feature has "geometry" (object or null) and "properties" (object or
//     null), and "id" if present is a string or number (a number within
//     float64 range, as for every number outside coordinates: "id":1e400
//     is [RuleNumberTooLarge]; ids beyond float64 precision, such as
//     large integers, are accepted and kept as written); a FeatureCollection
//     has a "features" array of Features; a GeometryCollection has a
//     "geometries" array of geometries.
//   - RFC 7946 section 7.1: "coordinates" or "geometries" on a Feature or
//     FeatureCollection, "geometry" or "properties" on a FeatureCollection
//     or geometry, and "features" on a Feature or geometry are rejected.
//     So are "geometries" on a non-collection geometry and "coordinates" on
//     a GeometryCollection, which would make the object ambiguous in the
//     same way.
//   - Positions: 2 or 3 finite numbers (null is rejected rather than read
//     as 0), longitude in [-180, 180], latitude in [-90, 90]; coordinates
//     nested exactly as deep as the type requires; a LineString has at
//     least 2 positions; a linear ring at least 4, the first and last
//     identical.
//   - Polygons are valid in the OGC Simple Features sense: no ring
//     crosses, touches or retraces itself; rings of one polygon do not
//     cross or share a segment; holes lie inside the exterior ring and
//     not inside one another; rings may touch at points but not so that
//     the interior falls apart (a hole may touch the shell at one point);
//     the polygons of a MultiPolygon neither overlap nor share a segment
//     (they may touch at points).
//   - bbox: 4 or 6 finite numbers, longitudes in [-180, 180], latitudes in
//     [-90, 90], minimum not above maximum except for longitudes, where
//     west > east is a box crossing the antimeridian (RFC 7946 section
//     5.2); and every position of the object lies inside it.
//   - crs: see [Options.CRS].
//
// # Geometry predicates
//
// Orientation is decided exactly and at the same cost at every scale: a
// floating-point evaluation with Shewchuk's error bound settles almost
// every test; when its products underflow (coordinates or differences
// near 1e-200) the differences are rescaled by powers of two, which is
// exact, and filtered again; nearly collinear points are summed exactly
// with Shewchuk's expansion arithmetic, in floating point down to the
// subnormals and without allocating. math/big rationals remain only for
// differences of 2^500 or more, far outside GeoJSON's coordinate range.
// Segment intersection is built on it,
// so nearly collinear points are never misjudged. Ring checks run one
// Shamos–Hoey plane sweep over all segments of a polygon (or of all
// polygons of a MultiPolygon), with blocks of at most 32 segments,
// ordered by a balanced (AVL) tree, as sweep status: O(n log n) in the
// worst case, whatever the shape, with no
// spatial index to degrade on long thin or zigzag rings. The same sweep finds where rings touch
// (and checks that rings meeting at a point do not cross there) and which
// ring directly encloses each ring, from which holes outside their shell,
// nested holes and overlapping polygons follow without any further
// pairwise test.
//
// # Differences from GEOS and RFC 7946
//
// The aim is that a document accepted here is accepted by PostGIS
// ST_IsValid and by any RFC 7946 parser, so that a 422 is final. Where
// the package differs:
//
//   - A geometry whose "coordinates" is an empty array is accepted, as
//     RFC 7946 section 3.1 allows, and decoded as an empty go-geom
//     geometry (not as null); [Options.RejectEmptyCoordinates] refuses
//     it. An empty part inside coordinates (a MultiPolygon's [[]]) is
//     always rejected. Empty GeometryCollections and FeatureCollections
//     are accepted.
//   - Coordinates outside [-180, 180] × [-90, 90] are rejected. RFC 7946
//     does not spell out the range, but its CRS is geographic and GEOS
//     does not care; out-of-range values are almost always swapped axes
//     or projected coordinates.
//   - GEOS removes repeated consecutive positions before checking, and so
//     does this package (a ring [a, a, b, c, a] is valid). A ring with
//     fewer than 3 distinct positions is reported as
//     [RuleRingSelfIntersection] where GEOS says "too few points".
//   - GEOS accepts a ring that touches itself at a point only when it
//     forms an "inverted" hole in some modes; here, as in OGC and
//     ST_IsValid's default, any self-touch is invalid.
//   - A LineString whose positions are all equal is accepted (GEOS calls
//     it invalid); RFC 7946 only asks for two positions.
//   - The right-hand rule (RFC 7946 section 3.1.6) is not enforced unless
//     [Options.StrictRightHandRule] is set: the RFC says parsers SHOULD
//     NOT reject on winding order.
//   - Positions with more than three elements are rejected unless
//     [Options.AllowExtraDimensions] is set: RFC 7946 leaves their meaning
//     undefined. With it, a fourth element present on every position of a
//     geometry is kept as M (layout XYZM); other extra elements are
//     dropped.
//   - A geometry mixing 2D and 3D positions is rejected by default
//     ([Options.MixedDimensions]): go-geom needs one layout per geometry,
//     and filling in a missing altitude would invent data.
//   - Nested and single-member GeometryCollections, which RFC 7946 says
//     producers SHOULD avoid, are accepted, up to
//     [Options.MaxCollectionDepth] levels.
//   - A bbox with 6 elements on 2D geometry, or 4 on 3D geometry, is
//     accepted; only the axes present on both are compared.
//   - Rings are compared in planar longitude/latitude, as GEOS does, not
//     along great circles; a polygon crossing the antimeridian must be
//     split, as RFC 7946 section 3.1.9 says.
//
// # Problems and rules
//
// Problems are listed in document order. The polygon checks stop at the
// first fault of each polygon. Exceeding a limit stops the whole parse,
// with the problems found so far plus the limit problem; the rest of the
// document is then not checked even for JSON syntax.
package geojson
