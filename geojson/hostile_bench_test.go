package geojson

import (
	"errors"
	"strconv"
	"testing"

	"github.com/geoidem/geoidem/internal/benchshape"
)

// The hostile inputs of issue 16 next to benign inputs of about the same
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

func benchHostile(b *testing.B, data []byte, wantProblems bool) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		n, err := validateAnswer(data)
		if err != nil {
			b.Fatal(err)
		}
		if (n > 0) != wantProblems {
			b.Fatalf("problem document of %d bytes, want problems: %v", n, wantProblems)
		}
	}
}

func BenchmarkHostileProblemDocument(b *testing.B) {
	b.Run("bomb-1MiB", func(b *testing.B) { benchHostile(b, benchshape.ProblemBomb(1<<20, 100), true) })
	b.Run("benign-1MiB", func(b *testing.B) { benchHostile(b, benchshape.BigString(1<<20), false) })
}

func BenchmarkHostileHoles(b *testing.B) {
	for _, n := range []int{20_000, 50_000} {
		holes := benchshape.Holes(n)
		b.Run("holes-"+strconv.Itoa(n), func(b *testing.B) { benchHostile(b, holes, false) })
		// A circle of the same size in bytes.
		b.Run("circle-same-size-"+strconv.Itoa(n), func(b *testing.B) { benchHostile(b, benchshape.CircleOfSize(len(holes), 1), false) })
	}
}

func BenchmarkHostileTinyCircle(b *testing.B) {
	b.Run("scale-1e-200", func(b *testing.B) { benchHostile(b, benchshape.Circle(21_000, 1e-200), false) })
	b.Run("scale-1", func(b *testing.B) { benchHostile(b, benchshape.Circle(21_000, 1), false) })
}
