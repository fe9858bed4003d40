package geojson

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// runPositions are positions of every kind that run2 meets: the usual
// ones it parses and the others it leaves to positionFast and position.
var runPositions = []string{
	`[1.5,2.25]`, `[-179.999999999,89.123456789]`, `[10.809016994,50.587785252]`,
	`[0,0]`, `[180,-90]`, `[1.5,2.25]`, `[1.5,2.25]`, `[3,4]`,
	`[1,2,3]`, `[1.5,2.25,7]`, // three dimensions
	`[181,0]`, `[0,-90.5]`, // out of range
	`[1e1,2]`, `[1,2E-1]`, `[01,2]`, `[1.,2]`, // not scanNum's
	`[1,2,3,4]`, `[1]`, `[]`, `[null,1]`, `["a",1]`, `[[1,2],3]`, `5`, // malformed
	`[12345678901234567890,1]`, `[0.12345678901234567890,1]`, // too many digits
}

// slowPosition returns pos with a space after each '[', which neither
// run2 nor positionFast takes: position parses it.
func slowPosition(pos string) string {
	return strings.ReplaceAll(pos, "[", "[ ")
}

// TestRun2MatchesPosition checks that lines of positions, where run2
// reads the usual ones, decode to the same positions and problems as the
// same lines with every position parsed by position.
func TestRun2MatchesPosition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 3000 {
		nlines := 1 + rng.IntN(3)
		var fast, slow strings.Builder
		fast.WriteString(`{"type":"MultiLineString","coordinates":[`)
		slow.WriteString(`{"type":"MultiLineString","coordinates":[`)
		for l := range nlines {
			if l > 0 {
				fast.WriteByte(',')
				slow.WriteByte(',')
			}
			fast.WriteByte('[')
			slow.WriteByte('[')
			n := rng.IntN(12)
			for k := range n {
				if k > 0 {
					sep := ","
					if rng.IntN(8) == 0 {
						sep = " , "
					}
					fast.WriteString(sep)
					slow.WriteString(sep)
				}
				var pos string
				if rng.IntN(3) == 0 {
					pos = runPositions[rng.IntN(len(runPositions))]
				} else {
					pos = runPositions[rng.IntN(8)] // the usual ones
				}
				fast.WriteString(pos)
				slow.WriteString(slowPosition(pos))
			}
			if rng.IntN(6) == 0 {
				fast.WriteByte(' ')
				slow.WriteByte(' ')
			}
			fast.WriteByte(']')
			slow.WriteByte(']')
		}
		fast.WriteString(`]}`)
		slow.WriteString(`]}`)
		opts := Options{}
		switch rng.IntN(4) {
		case 0:
			opts.MaxPositions = 1 + rng.IntN(12)
		case 1:
			opts.MaxDepth = 2 + rng.IntN(3)
		case 2:
			opts.MaxPositions = -1 // no limit
		}
		fd, slowData := []byte(fast.String()), []byte(slow.String())
		ffs, ferr := decode(fd, opts)
		sfs, serr := decode(slowData, opts)
		if !sameProblems(ferr, serr) {
			t.Fatalf("iteration %d, %+v:\n%s: %v\n%s: %v", iter, opts, fd, ferr, slowData, serr)
		}
		if ferr != nil {
			continue
		}
		if !sameFlat(ffs[0].Geometry, sfs[0].Geometry) {
			t.Fatalf("iteration %d: %s: %v, but %s: %v", iter, fd, ffs[0].Geometry.FlatCoords(), slowData, sfs[0].Geometry.FlatCoords())
		}
	}
}

// sameProblems reports whether a and b are both nil or report the same
// problems, in the same order (a SyntaxError's offset aside).
func sameProblems(a, b error) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	if a == nil {
		return true
	}
	var va, vb *ValidationError
	if errors.As(a, &va) != errors.As(b, &vb) {
		return false
	}
	if va == nil {
		var sa, sb *SyntaxError
		return errors.As(a, &sa) && errors.As(b, &sb)
	}
	return slices.EqualFunc(va.Violations, vb.Violations, func(x, y Violation) bool {
		return x.Rule == y.Rule && x.Pointer == y.Pointer && x.Message == y.Message
	})
}

// TestRun2Ring checks a ring read by run2: its closure, its positions and
// the limit on positions, met inside the run.
func TestRun2Ring(t *testing.T) {
	ring := `{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]]]}`
	fs, err := decode([]byte(ring), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fs[0].Geometry.FlatCoords(), []float64{0, 0, 1, 0, 1, 1, 0, 1, 0, 0}; !slices.Equal(got, want) {
		t.Fatalf("positions %v, want %v", got, want)
	}
	open := `{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0.5]]]}`
	if err := Validate([]byte(open), Options{}); !isRule(err, RuleRingNotClosed) {
		t.Fatalf("open ring: %v", err)
	}
	if err := Validate([]byte(ring), Options{MaxPositions: 4}); !isRule(err, RuleLimitPositions) {
		t.Fatalf("5 positions, at most 4: %v", err)
	}
	if err := Validate([]byte(ring), Options{MaxPositions: 5}); err != nil {
		t.Fatalf("5 positions, at most 5: %v", err)
	}
}

// isRule reports whether err is a ValidationError with a problem of rule.
func isRule(err error, rule string) bool {
	var verr *ValidationError
	return errors.As(err, &verr) && hasRule(verr, rule)
}
