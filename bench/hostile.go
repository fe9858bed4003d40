package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/internal/allocstat"
	"github.com/geoidem/geoidem/internal/benchshape"
)

// Section 6: the hostile inputs of issue 16 (items 1, 4 and 5) and issue
// 23 (item 4), each next to a benign document of about the same size,
// through RequestValidator.DecodeRequest and, for a rejected document, the
// problem document the middleware would send.

// hostilePair is a hostile input and its benign twin.
type hostilePair struct {
	name, short     string // short: the chart's group label
	hostile, benign []byte
	hostileNote     string
	benignNote      string
}

func hostilePairs(o *options) []hostilePair {
	var ps []hostilePair
	bomb := benchshape.ProblemBomb(o.hostileBody, 100)
	ps = append(ps, hostilePair{
		name:    fmt.Sprintf("problem document, %d KiB body", o.hostileBody>>10),
		short:   fmt.Sprintf("422, %d KiB", o.hostileBody>>10),
		hostile: bomb, hostileNote: "one member name of '<' filling the body, then 100 numbers 1e400 (100 problems whose pointers repeat the name)",
		benign: benchshape.BigString(len(bomb)), benignNote: "a valid Feature with one string property filling the body",
	})
	for _, n := range o.hostileHoles {
		h := benchshape.Holes(n)
		ps = append(ps, hostilePair{
			name:    fmt.Sprintf("%d holes", n),
			short:   fmt.Sprintf("%dk holes", n/1000),
			hostile: h, hostileNote: fmt.Sprintf("a valid Polygon: a square shell with %d triangular holes", n),
			benign: benchshape.CircleOfSize(len(h), 1), benignNote: "a valid Polygon: a circle of the same size",
		})
	}
	kib := o.hostileBody >> 10
	circle := benchshape.CircleOfSize(o.hostileBody, 1)
	for _, b := range []struct {
		name, short, note string
		body              []byte
	}{
		{"MultiPoint of []", "[] positions", "a MultiPoint whose every position is `[]`", benchshape.EmptyPositions(o.hostileBody)},
		{"MultiLineString of []", "[] lines", "a MultiLineString whose every LineString is `[]`", benchshape.EmptyLines(o.hostileBody)},
		{"Polygon of [] rings", "[] rings", "a Polygon whose every ring is `[]`", benchshape.EmptyRings(o.hostileBody)},
		{"MultiPolygon of [[]]", "[[]] polygons", "a MultiPolygon whose every Polygon is `[[]]`", benchshape.EmptyPolygons(o.hostileBody)},
		{"overlapping triangles", "triangles", "a MultiPolygon of triangles with integer corners, each overlapping its neighbours", benchshape.Triangles(o.hostileBody)},
	} {
		ps = append(ps, hostilePair{
			name:    fmt.Sprintf("%s, %d KiB", b.name, kib),
			short:   b.short,
			hostile: b.body, hostileNote: b.note + " (issue 23)",
			benign: circle, benignNote: "a valid Polygon: a circle of the same size",
		})
	}
	ps = append(ps, hostilePair{
		name:    fmt.Sprintf("circle of %d vertices at 1e-200", o.hostileCircle),
		short:   "circle 1e-200",
		hostile: benchshape.Circle(o.hostileCircle, 1e-200), hostileNote: "a valid Polygon: a circle of radius 1e-200 around (1e-199, 5e-199)",
		benign: benchshape.Circle(o.hostileCircle, 1), benignNote: "the same circle at scale 1",
	})
	return ps
}

// answer is what the middleware does with a body: RequestValidator's
// DecodeRequest and, for a ValidationError, the problem document.
func answer(data []byte) error {
	_, err := geojson.RequestValidator{}.DecodeRequest(hostileRequest, data)
	var verr *geojson.ValidationError
	if errors.As(err, &verr) {
		if len(verr.ProblemJSON()) > geojson.MaxProblemDocumentBytes {
			return fmt.Errorf("problem document over %d bytes", geojson.MaxProblemDocumentBytes)
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
// allocation (internal/allocstat, which geojson's
// TestHostileAllocationPerByte measures with too).
func measureHostile(data []byte, d time.Duration) (hostileCost, error) {
	cold, warm, err := allocstat.Bytes(func() error { return answer(data) })
	if err != nil {
		return hostileCost{}, err
	}
	n := float64(len(data))
	return hostileCost{bytes: len(data), perByte: float64(d.Nanoseconds()) / n,
		coldPerB: float64(cold) / n, warmPerB: float64(warm) / n, timeString: fmtDur(d)}, nil
}

func runHostile(ctx context.Context, s *section) error {
	o := s.o
	pairs := hostilePairs(o)
	s.line("The inputs of issues 16 and 23 whose cost used to be far out of proportion to their size, each next to a benign document of about the same size.")
	s.line("Each call is `geojson.RequestValidator.DecodeRequest` (what the middleware calls) and, when the document is rejected, `ProblemJSON` (the 422 body it sends).")
	s.line("Each input is timed %d times, hostile and benign in turn, each time the best of 5 batch means within %v after a checked first call; the table keeps each input's best.", hostileRounds, o.valTime/hostileRounds)
	s.line("Allocation is `runtime.MemStats.TotalAlloc` per call, the total allocated, which bounds the peak heap the call can add: cold, one call after two collections (which empty geojson's pools of parsers and sweep buffers), and warm, the least of it and %d calls after it.", allocstat.WarmCalls)
	s.line("Cost is given per input byte; the ratios divide the hostile input's by the benign one's.")
	s.line("")
	for _, p := range pairs {
		s.line("- **%s**: %s; benign: %s.", p.name, p.hostileNote, p.benignNote)
	}
	s.line("")
	header := []string{"input", "hostile bytes", "hostile time", "hostile ns/B", "hostile alloc B/B cold / warm", "benign bytes", "benign time", "benign ns/B", "benign alloc B/B cold / warm", "time ratio", "alloc ratio cold / warm"}
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
		rt, rc, rw := h.perByte/b.perByte, h.coldPerB/b.coldPerB, h.warmPerB/b.warmPerB
		worstT, worstA = max(worstT, rt), max(worstA, rc, rw)
		rows = append(rows, []string{p.name,
			fmt.Sprint(h.bytes), h.timeString, fmt.Sprintf("%.1f", h.perByte), fmt.Sprintf("%.2f / %.2f", h.coldPerB, h.warmPerB),
			fmt.Sprint(b.bytes), b.timeString, fmt.Sprintf("%.1f", b.perByte), fmt.Sprintf("%.2f / %.2f", b.coldPerB, b.warmPerB),
			fmt.Sprintf("%.1f×", rt), fmt.Sprintf("%.1f× / %.1f×", rc, rw)})
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
	s.headline("hostile inputs (issues 16 and 23) against benign ones of the same size",
		"at most %.1f× the time and %.1f× the allocation per byte (cold or warm); problem documents at most %d KiB",
		worstT, worstA, geojson.MaxProblemDocumentBytes>>10)
	return nil
}
