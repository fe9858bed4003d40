package geojson

import (
	"errors"
	"net/http"
	"strconv"
	"testing"

	"github.com/geoidem/geoidem/internal/testkit"
)

// The hostile inputs (bodies whose cost was once far out of proportion to
// their size) next to benign inputs of about the same
// size: each pair's ns/op and B/op ratio is the cost multiple quoted in
// SECURITY.md.
//
//	go test -run '^$' -bench Hostile -benchtime 3x ./geojson

// validateAnswer validates data and, for a validation error, renders the
// problem document too: the whole cost of a 422 answer.
func validateAnswer(data []byte) (int, error) {
	err := Validate(data, Options{})
	var verr *ValidationError
	if errors.As(err, &verr) {
		return len(verr.ProblemJSON()), nil
	}
	return 0, err
}

// decodeAnswer is validateAnswer through RequestValidator.DecodeRequest,
// what the middleware calls.
func decodeAnswer(data []byte) (int, error) {
	_, err := RequestValidator{}.DecodeRequest(geoJSONRequest, data)
	var verr *ValidationError
	if errors.As(err, &verr) {
		return len(verr.ProblemJSON()), nil
	}
	return 0, err
}

var geoJSONRequest = func() *http.Request {
	r, err := http.NewRequest(http.MethodPost, "/", nil)
	if err != nil {
		panic(err)
	}
	r.Header.Set("Content-Type", "application/geo+json")
	return r
}()

func benchHostile(b *testing.B, data []byte, wantProblems bool) {
	benchAnswer(b, validateAnswer, data, wantProblems)
}

func benchAnswer(b *testing.B, answer func([]byte) (int, error), data []byte, wantProblems bool) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		n, err := answer(data)
		if err != nil {
			b.Fatal(err)
		}
		if (n > 0) != wantProblems {
			b.Fatalf("problem document of %d bytes, want problems: %v", n, wantProblems)
		}
	}
}

func BenchmarkHostileProblemDocument(b *testing.B) {
	b.Run("bomb-1MiB", func(b *testing.B) { benchHostile(b, testkit.ProblemBomb(1<<20, 100), true) })
	b.Run("benign-1MiB", func(b *testing.B) { benchHostile(b, testkit.BigString(1<<20), false) })
}

func BenchmarkHostileHoles(b *testing.B) {
	for _, n := range []int{20_000, 50_000} {
		holes := testkit.Holes(n)
		b.Run("holes-"+strconv.Itoa(n), func(b *testing.B) { benchHostile(b, holes, false) })
		// A circle of the same size in bytes.
		b.Run("circle-same-size-"+strconv.Itoa(n), func(b *testing.B) { benchHostile(b, testkit.CircleOfSize(len(holes), 1), false) })
	}
}

func BenchmarkHostileTinyCircle(b *testing.B) {
	b.Run("scale-1e-200", func(b *testing.B) { benchHostile(b, testkit.Circle(21_000, 1e-200), false) })
	b.Run("scale-1", func(b *testing.B) { benchHostile(b, testkit.Circle(21_000, 1), false) })
}

// BenchmarkHostileTriangles: overlapping triangles, a 1 MiB
// MultiPolygon rejected by the sweep, and a valid circle of the same size,
// through Validate and through RequestValidator.DecodeRequest.
func BenchmarkHostileTriangles(b *testing.B) {
	tri, circle := testkit.Triangles(1<<20), testkit.CircleOfSize(1<<20, 1)
	for _, a := range []struct {
		name   string
		answer func([]byte) (int, error)
	}{{"validate", validateAnswer}, {"decode", decodeAnswer}} {
		b.Run(a.name+"/triangles-1MiB", func(b *testing.B) { benchAnswer(b, a.answer, tri, true) })
		b.Run(a.name+"/circle-same-size", func(b *testing.B) { benchAnswer(b, a.answer, circle, false) })
	}
}
