package problem_test

import (
	"strings"
	"testing"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/middleware"
	"github.com/geoidem/geoidem/problem"
	"github.com/geoidem/geoidem/standardwebhooks"
)

// TestExportedTypesUnderTypeBase: the exported problem type URIs (and
// client's media type) are written out in full, so that their
// documentation shows them; every type is TypeBase followed by a fragment.
func TestExportedTypesUnderTypeBase(t *testing.T) {
	for _, typ := range []string{
		middleware.ProblemMissingKey, middleware.ProblemNotReplayable,
		geojson.ProblemTypeInvalidGeoJSON, geojson.ProblemTypeMalformedJSON, geojson.ProblemTypeUnsupportedMediaType,
		standardwebhooks.ProblemSignatureMissing, standardwebhooks.ProblemSignatureInvalid,
		standardwebhooks.ProblemTimestampOutOfTolerance, standardwebhooks.ProblemTimestampAhead,
	} {
		frag, ok := strings.CutPrefix(typ, problem.TypeBase)
		if !ok || frag == "" || strings.ContainsAny(frag, "#/ ") {
			t.Errorf("%q is not %q followed by a fragment", typ, problem.TypeBase)
		}
	}
}
