package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/internal/testkit"
)

// problemDocumentBound is the size geojson documents for a 422's problem
// document (ValidationError.ProblemJSON: at most 64 KiB).
const problemDocumentBound = 64 << 10

// Section 6: the hostile inputs (a huge member name, many holes, a tiny
// circle, bodies whose every element is a problem, overlapping triangles),
// each next to a benign document of about the same size,
// through RequestValidator.DecodeRequest and, for a rejected document, the
// problem document the middleware would send.

// hostilePair is a hostile input and its benign twin.
type hostilePair struct {
	name, short     string // short: the chart's group label
	hostile, benign []byte
	hostileNote     string
	benignNote      string
	// circle is the valid circle of about the hostile input's size that
	// hostileAllocBound is checked against, when benign is not one (the
	// problem document's twin is a Feature with a long string, and the
	// circle at 1e-200 is longer than its twin at scale 1).
	circle []byte
}

func hostilePairs(o *options) []hostilePair {
	var ps []hostilePair
	bomb := testkit.ProblemBomb(o.hostileBody, 100)
	ps = append(ps, hostilePair{
		name:    fmt.Sprintf("problem document, %d KiB body", o.hostileBody>>10),
		short:   fmt.Sprintf("422, %d KiB", o.hostileBody>>10),
		hostile: bomb, hostileNote: "one member name of '<' filling the body, then 100 numbers 1e400 (100 problems whose pointers repeat the name)",
		benign: testkit.BigString(len(bomb)), benignNote: "a valid Feature with one string property filling the body",
		circle: testkit.CircleOfSize(len(bomb), 1),
	})
	for _, n := range o.hostileHoles {
		h := testkit.Holes(n)
		ps = append(ps, hostilePair{
			name:    fmt.Sprintf("%d holes", n),
			short:   fmt.Sprintf("%dk holes", n/1000),
			hostile: h, hostileNote: fmt.Sprintf("a valid Polygon: a square shell with %d triangular holes", n),
			benign: testkit.CircleOfSize(len(h), 1), benignNote: "a valid Polygon: a circle of the same size",
		})
	}
	kib := o.hostileBody >> 10
	circle := testkit.CircleOfSize(o.hostileBody, 1)
	for _, b := range []struct {
		name, short, note string
		body              []byte
	}{
		{"MultiPoint of []", "[] positions", "a MultiPoint whose every position is `[]` ", testkit.EmptyPositions(o.hostileBody)},
		{"MultiLineString of []", "[] lines", "a MultiLineString whose every LineString is `[]` ", testkit.EmptyLines(o.hostileBody)},
		{"Polygon of [] rings", "[] rings", "a Polygon whose every ring is `[]` ", testkit.EmptyRings(o.hostileBody)},
		{"MultiPolygon of [[]]", "[[]] polygons", "a MultiPolygon whose every Polygon is `[[]]` ", testkit.EmptyPolygons(o.hostileBody)},
		{"overlapping triangles", "triangles", "a MultiPolygon of triangles with integer corners, each overlapping its neighbours ", testkit.Triangles(o.hostileBody)},
		{"FeatureCollection of null-geometry Features", "null Features", "a FeatureCollection whose every Feature has null geometry and properties", testkit.NullFeatures(o.hostileBody)},
	} {
		ps = append(ps, hostilePair{
			name:    fmt.Sprintf("%s, %d KiB", b.name, kib),
			short:   b.short,
			hostile: b.body, hostileNote: b.note,
			benign: circle, benignNote: "a valid Polygon: a circle of the same size",
		})
	}
	tiny := testkit.Circle(o.hostileCircle, 1e-200)
	ps = append(ps, hostilePair{
		name:    fmt.Sprintf("circle of %d vertices at 1e-200", o.hostileCircle),
		short:   "circle 1e-200",
		hostile: tiny, hostileNote: "a valid Polygon: a circle of radius 1e-200 around (1e-199, 5e-199)",
		benign: testkit.Circle(o.hostileCircle, 1), benignNote: "the same circle at scale 1",
		circle: testkit.CircleOfSize(len(tiny), 1), // its numbers are longer than its twin's
	})
	return ps
}

// answer is what the middleware does with a body: RequestValidator's
// DecodeRequest and, for a ValidationError, the problem document.
func answer(data []byte) error {
	_, err := geojson.RequestValidator{}.DecodeRequest(hostileRequest, data)
	var verr *geojson.ValidationError
	if errors.As(err, &verr) {
		if len(verr.ProblemJSON()) > problemDocumentBound {
			return fmt.Errorf("problem document over %d bytes", problemDocumentBound)
		}
		return nil
	}
	return err
}

// hostileRequest carries the headers DecodeRequest checks.
var hostileRequest = func() *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set("Content-Type", "application/geo+json")
	return r
}()

// hostileAllocBound is SECURITY.md's bound, which section 6 checks: every
// hostile input allocates at most this many times the bytes per input
// byte of its benign twin, cold and warm (geojson's
// TestHostileAllocationPerByte holds it in go test).
const hostileAllocBound = 5.0

// hostileVerdict is whether the worst allocation ratio of a run meets
// hostileAllocBound.
func hostileVerdict(worst float64) string {
	if worst > hostileAllocBound {
		return "not met"
	}
	return "met"
}

// hostileCost is one measured input.
type hostileCost struct {
	bytes      int
	perByte    float64 // ns per input byte
	coldPerB   float64 // bytes allocated per input byte, cold
	warmPerB   float64 // and warm
	timeString string
}

// hostileRounds is how many times each pair is timed, hostile and benign
// in turn, keeping each one's best: on a shared machine the ratio of two
// measurements taken seconds apart is otherwise mostly noise.
const hostileRounds = 3

// measureHostile completes the measurement of data, timed at d, with its
// allocation.
func measureHostile(data []byte, d time.Duration) (hostileCost, error) {
	cold, warm, err := allocPerByte(data)
	if err != nil {
		return hostileCost{}, err
	}
	return hostileCost{bytes: len(data), perByte: float64(d.Nanoseconds()) / float64(len(data)),
		coldPerB: cold, warmPerB: warm, timeString: fmtDur(d)}, nil
}

// allocPerByte returns the bytes answer allocates per byte of data, cold
// and warm (internal/testkit AllocBytes, which geojson's
// TestHostileAllocationPerByte measures with too).
func allocPerByte(data []byte) (cold, warm float64, err error) {
	c, w, err := testkit.AllocBytes(func() error { return answer(data) })
	n := float64(len(data))
	return float64(c) / n, float64(w) / n, err
}

// allocRatio is the table's text for the allocation ratio h/b: a dash
// when the benign input allocates (next to) nothing per byte, where the
// ratio would say nothing but how little that is.
func allocRatio(h, b float64) string {
	if b < 0.01 {
		return "—"
	}
	return fmt.Sprintf("%.1f×", h/b)
}

func runHostile(ctx context.Context, s *section) error {
	o := s.o
	pairs := hostilePairs(o)
	s.line("The inputs whose cost used to be far out of proportion to their size, each next to a benign document of about the same size.")
	s.line("Each call is `geojson.RequestValidator.DecodeRequest` (what the middleware calls) and, when the document is rejected, `ProblemJSON` (the 422 body it sends).")
	s.line("Each input is timed %d times, hostile and benign in turn, each time the best of 5 batch means within %v after a checked first call; the table keeps each input's best.", hostileRounds, o.valTime/hostileRounds)
	s.line("Allocation is `runtime.MemStats.TotalAlloc` per call, the total allocated, which bounds the peak heap the call can add: cold, one call after two collections (which empty geojson's pools of parsers and sweep buffers), and warm, the least of it and %d calls after it.", testkit.WarmCalls)
	s.line("Cost is given per input byte; the ratios divide the hostile input's by the benign one's (a dash: the benign input allocates less than 0.01 B per byte).")
	s.line("The bound this section checks (SECURITY.md): every hostile input allocates at most %g× the bytes per input byte of a valid circle of its size, cold and warm (the last column; the circle is the benign twin but for the problem document and the circle at 1e-200); a ratio over it is in bold, and the verdict closes the section.", hostileAllocBound)
	s.line("")
	for _, p := range pairs {
		s.line("- **%s**: %s; benign: %s.", p.name, p.hostileNote, p.benignNote)
	}
	s.line("")
	header := []string{"input", "hostile bytes", "hostile time", "hostile ns/B", "hostile alloc B/B cold / warm", "benign bytes", "benign time", "benign ns/B", "benign alloc B/B cold / warm", "time ratio", "alloc ratio cold / warm",
		fmt.Sprintf("alloc ÷ circle's cold / warm (bound %g×)", hostileAllocBound)}
	var rows [][]string
	var groups []string
	times := [][]float64{nil, nil}
	allocs := [][]float64{nil, nil, nil, nil}
	worstT, worstA := 0.0, 0.0
	for _, p := range pairs {
		var best [2]time.Duration
		for range hostileRounds {
			for i, data := range [2][]byte{p.hostile, p.benign} {
				d, err := timeOp(ctx, answer, data, o.valTime/hostileRounds)
				if err != nil {
					return fmt.Errorf("%s: %w", p.name, err)
				}
				if best[i] == 0 || d < best[i] {
					best[i] = d
				}
			}
		}
		h, err := measureHostile(p.hostile, best[0])
		if err != nil {
			return fmt.Errorf("%s, hostile: %w", p.name, err)
		}
		b, err := measureHostile(p.benign, best[1])
		if err != nil {
			return fmt.Errorf("%s, benign: %w", p.name, err)
		}
		cc, cw := b.coldPerB, b.warmPerB
		if p.circle != nil {
			if cc, cw, err = allocPerByte(p.circle); err != nil {
				return fmt.Errorf("%s, circle: %w", p.name, err)
			}
		}
		rt, rc, rw := h.perByte/b.perByte, h.coldPerB/cc, h.warmPerB/cw
		worstT, worstA = max(worstT, rt), max(worstA, rc, rw)
		rows = append(rows, []string{p.name,
			fmt.Sprint(h.bytes), h.timeString, fmt.Sprintf("%.1f", h.perByte), fmt.Sprintf("%.2f / %.2f", h.coldPerB, h.warmPerB),
			fmt.Sprint(b.bytes), b.timeString, fmt.Sprintf("%.1f", b.perByte), fmt.Sprintf("%.2f / %.2f", b.coldPerB, b.warmPerB),
			fmt.Sprintf("%.1f×", rt), allocRatio(h.coldPerB, b.coldPerB) + " / " + allocRatio(h.warmPerB, b.warmPerB),
			boldOver(rc, hostileAllocBound) + " / " + boldOver(rw, hostileAllocBound)})
		groups = append(groups, p.short)
		times[0], times[1] = append(times[0], h.perByte), append(times[1], b.perByte)
		allocs[0], allocs[1] = append(allocs[0], h.coldPerB), append(allocs[1], b.coldPerB)
		allocs[2], allocs[3] = append(allocs[2], h.warmPerB), append(allocs[3], b.warmPerB)
		o.logf("hostile: %s done", p.name)
	}
	s.table(header, rows)
	names := []string{"hostile", "benign, same size"}
	if err := s.figure("hostile-time.svg", "time per input byte, hostile and benign inputs", barChart{
		title: "Time per input byte: hostile inputs and benign ones of the same size", yLabel: "ns per input byte",
		groups: groups, names: names, values: times,
	}.render()); err != nil {
		return err
	}
	if err := s.figure("hostile-alloc.svg", "bytes allocated per input byte, hostile and benign inputs", barChart{
		title: "Allocation per input byte: hostile inputs and benign ones of the same size", yLabel: "bytes allocated per input byte",
		groups: groups, names: []string{"hostile, cold", "benign, cold", "hostile, warm", "benign, warm"}, values: allocs,
	}.render()); err != nil {
		return err
	}
	s.line("**Allocation bound**: at most %g× the bytes allocated per input byte of a valid circle of the input's size, cold and warm: **%s** (worst %.1f×).",
		hostileAllocBound, hostileVerdict(worstA), worstA)
	s.line("")
	s.headline("hostile inputs against benign ones of the same size",
		"at most %.1f× the time and %.1f× the allocation per byte of a circle of the same size (cold or warm; bound %g×: %s); problem documents at most %d KiB",
		worstT, worstA, hostileAllocBound, hostileVerdict(worstA), problemDocumentBound>>10)
	return nil
}

// boldOver formats ratio r, in bold when it is over bound.
func boldOver(r, bound float64) string {
	if r > bound {
		return fmt.Sprintf("**%.1f×**", r)
	}
	return fmt.Sprintf("%.1f×", r)
}
