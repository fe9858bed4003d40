package geojson

// Options configures [Validate], [DecodeDocument] and [RequestValidator]. The zero
// value is ready to use: every zero field means the documented default.
type Options struct {
	// MaxBytes is the largest input accepted, in bytes. Zero means
	// 16 MiB; a negative value means no limit. Longer input is rejected
	// with the rule [RuleLimitBytes] before any parsing.
	MaxBytes int

	// MaxDepth is the deepest nesting of JSON arrays and objects accepted
	// anywhere in the document, foreign members and properties included.
	// Zero (or negative) means 64. Deeper input stops the parse with [RuleLimitDepth].
	MaxDepth int

	// MaxPositions is the largest total number of positions accepted in
	// one document. Zero means 1,000,000; a negative value means no limit.
	// More positions stop the parse with [RuleLimitPositions].
	MaxPositions int

	// MaxCollectionDepth is how deeply GeometryCollections may nest inside
	// one another (a GeometryCollection holding only other geometries has
	// depth 1). Zero (or negative) means 8. Deeper nesting is reported with
	// [RuleLimitCollectionDepth].
	MaxCollectionDepth int

	// MaxProblems caps the number of problems reported. Zero (or
	// negative) means 100.
	// Parsing continues after the cap so that malformed JSON is still
	// told apart; [ValidationError.Truncated] reports that problems were
	// dropped.
	MaxProblems int

	// StrictRightHandRule rejects polygons whose exterior ring is not
	// counterclockwise or whose holes are not clockwise ([RuleRightHandRule]).
	// The default accepts either winding, as RFC 7946 section 3.1.6 asks
	// of parsers.
	StrictRightHandRule bool

	// AllowExtraDimensions accepts positions with more than three
	// elements, checked to be finite numbers. When every position of a
	// geometry has a fourth element, it is kept as M (go-geom layout
	// XYZM), the "measure" RFC 7946 section 3.1.1 mentions; otherwise,
	// and for any element after the fourth, it is dropped. By default such
	// positions are rejected with [RulePositionLength].
	AllowExtraDimensions bool

	// RejectEmptyCoordinates rejects a geometry whose "coordinates" is an
	// empty array with [RuleEmptyCoordinates]. By default such a geometry
	// is accepted, as RFC 7946 section 3.1 allows, and decoded as an empty
	// go-geom geometry (its Empty method reports true), which is not the
	// same as a null geometry. An empty part inside coordinates (a
	// MultiPolygon's [[]], a LineString inside a MultiLineString with no
	// positions) is rejected either way.
	RejectEmptyCoordinates bool

	// CRS says what to do with a "crs" member, which RFC 7946 removed.
	// The default, [CRSAllowWGS84], accepts only a named CRS84 or
	// EPSG:4326 crs.
	CRS CRSPolicy

	// MixedDimensions says what to do with a geometry that mixes
	// two-element and three-element positions. The default,
	// [MixedDimensionsReject], rejects it with [RuleMixedDimensions].
	MixedDimensions MixedDimensionsPolicy
}

// CRSPolicy is the treatment of a "crs" member; see [Options.CRS].
type CRSPolicy int

const (
	// CRSAllowWGS84 accepts a "crs" member only when it names OGC CRS84
	// or EPSG:4326 (the coordinates RFC 7946 mandates) and rejects every
	// other value, null included, with [RuleCRS].
	CRSAllowWGS84 CRSPolicy = iota
	// CRSReject rejects every "crs" member.
	CRSReject
	// CRSIgnore treats "crs" as a foreign member and ignores its value.
	CRSIgnore
)

// MixedDimensionsPolicy is the treatment of a geometry mixing 2D and 3D
// positions; see [Options.MixedDimensions].
type MixedDimensionsPolicy int

const (
	// MixedDimensionsReject reports the first position whose number of
	// dimensions differs from the geometry's first position.
	MixedDimensionsReject MixedDimensionsPolicy = iota
	// MixedDimensionsDropZ accepts the geometry and normalises it to 2D:
	// every altitude of that geometry is dropped, also for ring closure
	// and bbox checks.
	MixedDimensionsDropZ
)

const (
	defaultMaxBytes           = 16 << 20
	defaultMaxDepth           = 64
	defaultMaxPositions       = 1_000_000
	defaultMaxCollectionDepth = 8
	defaultMaxProblems        = 100
)

// resolved returns o with defaults filled in and "no limit" encoded as
// the largest int.
func (o Options) resolved() Options {
	const unlimited = int(^uint(0) >> 1)
	switch {
	case o.MaxBytes == 0:
		o.MaxBytes = defaultMaxBytes
	case o.MaxBytes < 0:
		o.MaxBytes = unlimited
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = defaultMaxDepth
	}
	switch {
	case o.MaxPositions == 0:
		o.MaxPositions = defaultMaxPositions
	case o.MaxPositions < 0:
		o.MaxPositions = unlimited
	}
	if o.MaxCollectionDepth <= 0 {
		o.MaxCollectionDepth = defaultMaxCollectionDepth
	}
	if o.MaxProblems <= 0 {
		o.MaxProblems = defaultMaxProblems
	}
	return o
}
