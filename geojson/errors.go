package geojson

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/geoidem/geoidem/problem"
)

// Rule identifiers. They are stable: callers may match on them and they
// appear in problem documents. Each names one check; [Violation.Message]
// says what exactly was wrong.
const (
	RuleDuplicateMember = "duplicate-member" // an object repeats a member name (I-JSON, RFC 7493)
	RuleInvalidUTF8     = "invalid-utf8"     // a string is not valid UTF-8 or escapes a lone surrogate
	RuleRootNotObject   = "root-not-object"  // the document is not a JSON object
	RuleNumberTooLarge  = "number-too-large" // a number (outside coordinates) beyond float64 range (I-JSON, RFC 7493 section 2.2)

	RuleLimitBytes           = "limit-bytes"            // the input exceeds Options.MaxBytes
	RuleLimitDepth           = "limit-depth"            // nesting exceeds Options.MaxDepth
	RuleLimitPositions       = "limit-positions"        // positions exceed Options.MaxPositions
	RuleLimitCollectionDepth = "limit-collection-depth" // GeometryCollections nest deeper than Options.MaxCollectionDepth

	RuleMissingMember   = "missing-member"   // a required member (type, coordinates, geometries, geometry, properties, features) is absent
	RuleWrongType       = "wrong-type"       // a member or array element has the wrong JSON type
	RuleUnknownType     = "unknown-type"     // "type" is not one of the nine GeoJSON types (matched with exact case)
	RuleUnexpectedType  = "unexpected-type"  // a known GeoJSON type where another kind of object is required
	RuleForbiddenMember = "forbidden-member" // a member that changes GeoJSON semantics (RFC 7946 section 7.1)
	RuleCRS             = "crs"              // a "crs" member not allowed by Options.CRS

	RuleCoordinatesNesting = "coordinates-nesting" // coordinates nested too deeply or not deeply enough for the type
	RulePositionElement    = "position-element"    // a position element is not a number (null, string, ...)
	RulePositionLength     = "position-length"     // a position has fewer than 2 or more than 3 elements
	RulePositionNotFinite  = "position-not-finite" // a number too large to be a finite float64
	RuleLongitudeRange     = "longitude-range"     // longitude outside [-180, 180]
	RuleLatitudeRange      = "latitude-range"      // latitude outside [-90, 90]
	RuleMixedDimensions    = "mixed-dimensions"    // 2D and 3D positions mixed in one geometry
	RuleEmptyCoordinates   = "empty-coordinates"   // an empty coordinates array, or an empty part of one

	RuleLineStringTooShort = "linestring-too-short" // a LineString with fewer than 2 positions
	RuleRingTooShort       = "ring-too-short"       // a linear ring with fewer than 4 positions
	RuleRingNotClosed      = "ring-not-closed"      // a linear ring whose first and last positions differ

	RuleRingSelfIntersection = "ring-self-intersection" // a ring crosses, touches or retraces itself, or is degenerate
	RuleRingIntersection     = "ring-intersection"      // two rings of one polygon cross or share a segment
	RuleHoleOutsideShell     = "hole-outside-shell"     // a hole is not inside its polygon's exterior ring
	RuleNestedHoles          = "nested-holes"           // a hole lies inside another hole
	RuleInteriorDisconnected = "interior-disconnected"  // rings touch so that the polygon interior falls apart
	RuleMultiPolygonOverlap  = "multipolygon-overlap"   // two polygons of a MultiPolygon overlap or share a segment
	RuleRightHandRule        = "right-hand-rule"        // winding order (only with Options.StrictRightHandRule)
	RuleBBoxLength           = "bbox-length"            // bbox length is not 4 or 6
	RuleBBoxElement          = "bbox-element"           // a bbox element is not a finite number
	RuleBBoxOrder            = "bbox-order"             // a bbox minimum exceeds its maximum (longitude may wrap, RFC 7946 section 5.2)
	RuleBBoxRange            = "bbox-range"             // a bbox longitude or latitude is out of range
	RuleBBoxExcludesGeometry = "bbox-excludes-geometry" // a position lies outside the object's bbox
)

// Bounds of problem documents. A problem document is built from the
// input (pointers repeat member names, details quote numbers and names), so
// without bounds a small body could make a huge answer. Each
// [Violation.Pointer] is cut to at most maxPointerBytes and each
// [Violation.Message] to at most maxDetailBytes, with [Violation.Truncated]
// set; the ProblemJSON methods never return more than
// maxProblemDocumentBytes, listing fewer problems (and setting the
// document's "truncated" member) when all would not fit.
const (
	maxProblemDocumentBytes = 64 << 10
	maxPointerBytes         = 512
	maxDetailBytes          = 512
)

// Violation is one reason a document is not valid GeoJSON: a rule it
// breaks, where.
type Violation struct {
	// Pointer is the RFC 6901 JSON pointer of the offending value, for
	// example "/features/3/geometry/coordinates/0/7". The empty string
	// is the whole document.
	Pointer string `json:"pointer"`
	// Rule is one of the Rule constants.
	Rule string `json:"rule"`
	// Message says, in English, what is wrong.
	Message string `json:"detail"`
	// Truncated reports that Pointer was cut to 512 bytes (it is
	// then a prefix of the real pointer) or Message to 512 bytes
	// (it then ends with "…"). The parser cuts them as it records a
	// problem, so a problem costs at most a fixed size whatever the input.
	Truncated bool `json:"truncated,omitempty"`
}

// String formats p as "POINTER: RULE: message", with "(root)" standing
// for the empty pointer (the whole document).
func (p Violation) String() string {
	ptr := p.Pointer
	if ptr == "" {
		ptr = "(root)"
	}
	return ptr + ": " + p.Rule + ": " + p.Message
}

// Problem type URIs used in problem documents (RFC 9457).
const (
	ProblemTypeInvalidGeoJSON       = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#invalid-geojson"
	ProblemTypeMalformedJSON        = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#malformed-json"
	ProblemTypeUnsupportedMediaType = "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#unsupported-media-type"
)

// SyntaxError reports input that is not JSON (RFC 8259). It is distinct
// from [ValidationError]: the middleware answers it 400, not 422.
type SyntaxError struct {
	// Offset is the byte offset at which the error was detected.
	Offset int
	// Msg describes the error.
	Msg string
}

// Error implements error.
func (e *SyntaxError) Error() string {
	return "geojson: malformed JSON at offset " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// HTTPStatus returns 400.
func (e *SyntaxError) HTTPStatus() int { return http.StatusBadRequest }

// ProblemJSON returns an RFC 9457 problem document of type
// [ProblemTypeMalformedJSON].
func (e *SyntaxError) ProblemJSON() []byte {
	return problemDoc(ProblemTypeMalformedJSON, "Malformed JSON", http.StatusBadRequest,
		"the body is not JSON: "+e.Msg+" at offset "+strconv.Itoa(e.Offset), nil)
}

// ValidationError reports well-formed JSON that is not valid GeoJSON.
// The middleware answers it 422.
type ValidationError struct {
	// Violations lists the rules broken, in document order, at most
	// Options.MaxProblems of them; never empty.
	Violations []Violation
	// Truncated reports that more problems were found than listed.
	Truncated bool
}

// Error implements error; it names the first problem and how many
// there are.
func (e *ValidationError) Error() string {
	if len(e.Violations) == 0 {
		return "geojson: invalid GeoJSON"
	}
	s := "geojson: invalid GeoJSON: " + e.Violations[0].String()
	if n := len(e.Violations); n > 1 || e.Truncated {
		more := ""
		if e.Truncated {
			more = " or more"
		}
		s += fmt.Sprintf(" (and %d%s other problems)", n-1, more)
	}
	return s
}

// HTTPStatus returns 422.
func (e *ValidationError) HTTPStatus() int { return http.StatusUnprocessableEntity }

// ProblemJSON returns an RFC 9457 problem document of type
// [ProblemTypeInvalidGeoJSON] whose extension member "errors" lists the
// problems as {"pointer", "rule", "detail"}, each with "truncated": true
// when its pointer or detail was cut (see [Violation.Truncated]). The
// document is at most 64 KiB long and is not
// HTML-escaped; when e.Truncated is set or not every problem fits, it
// lists the first problems that fit and has the member "truncated": true,
// and its "detail" says how many it lists.
func (e *ValidationError) ProblemJSON() []byte {
	detail := func(listed int) string {
		s := fmt.Sprintf("the body is not valid GeoJSON: %d problem(s)", listed)
		if e.Truncated || listed < len(e.Violations) {
			s += " listed, more were found"
		}
		return s
	}
	return problemDocFit(ProblemTypeInvalidGeoJSON, "Invalid GeoJSON", http.StatusUnprocessableEntity, detail, e.Violations, e.Truncated)
}

// mediaTypeError is the refusal of a request whose Content-Type, ct as
// sent, is neither application/geo+json nor application/json: a 415
// problem of type [ProblemTypeUnsupportedMediaType] whose detail quotes ct,
// cut as a violation's message is.
func mediaTypeError(ct string) problem.Details {
	if strings.TrimSpace(ct) == "" {
		ct = "(none)"
	}
	return problem.Details{Type: ProblemTypeUnsupportedMediaType, Title: "Unsupported Media Type", Status: http.StatusUnsupportedMediaType,
		Detail: newProblem("", "", "Content-Type "+ct+" is not application/geo+json or application/json").Message}
}
