package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/geoidem/geoidem/geojson"
	"github.com/geoidem/geoidem/internal/testkit"
	sfgeom "github.com/peterstace/simplefeatures/geom"
	gogeojson "github.com/twpayne/go-geom/encoding/geojson"
)

// Section 3: validation throughput on the polygons of geojson's own
// benchmarks (geojson/bench_test.go): a circle and a zigzag star of n
// vertices around (10, 50).

// benchPolygon is the shape both validation benchmarks measure.
var benchPolygon = testkit.Polygon

// validator is one implementation under test.
type validator struct {
	name string
	note string
	run  func(data []byte) error
}

var validators = []validator{
	{"geojson.Validate", "RFC 7946 and OGC validity, every problem with a JSON pointer", func(d []byte) error {
		return geojson.Validate(d, geojson.Options{})
	}},
	{"geojson.DecodeDocument", "the same checks, then go-geom values", func(d []byte) error {
		_, err := geojson.DecodeDocument(d, geojson.Options{})
		return err
	}},
	{"go-geom decode only", "`json.Unmarshal` into go-geom's `geojson.Feature`; checks almost nothing", func(d []byte) error {
		var f gogeojson.Feature
		return json.Unmarshal(d, &f)
	}},
	{"simplefeatures validating", "`geom.UnmarshalGeoJSON` of the geometry, with its default validity check", func(d []byte) error {
		return sfGeometry(d, false)
	}},
	{"simplefeatures decode only", "`geom.UnmarshalGeoJSON(…, geom.NoValidate{})`", func(d []byte) error {
		return sfGeometry(d, true)
	}},
}

// sfGeometry decodes the Feature's geometry with simplefeatures: the
// Feature envelope with encoding/json, as simplefeatures' own
// GeoJSONFeature does, then the geometry, validated unless noValidate.
func sfGeometry(data []byte, noValidate bool) error {
	var f struct {
		Type     string          `json:"type"`
		Geometry json.RawMessage `json:"geometry"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	if f.Type != "Feature" {
		return errors.New("not a Feature")
	}
	var err error
	if noValidate {
		_, err = sfgeom.UnmarshalGeoJSON(f.Geometry, sfgeom.NoValidate{})
	} else {
		_, err = sfgeom.UnmarshalGeoJSON(f.Geometry)
	}
	return err
}

// timeOp returns the time of one call of fn on data: the best of a few
// batches' means, because the minimum is the estimate least disturbed by
// other processes on a shared machine. A first call checks the result; when
// it alone takes half the budget, it is the only sample.
func timeOp(ctx context.Context, fn func([]byte) error, data []byte, budget time.Duration) (time.Duration, error) {
	const batches = 5
	t0 := time.Now()
	if err := fn(data); err != nil {
		return 0, err
	}
	best := time.Since(t0)
	if best >= budget/2 {
		return best, nil
	}
	for range batches {
		var n int
		start := time.Now()
		for n == 0 || time.Since(start) < budget/batches {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			if err := fn(data); err != nil {
				return 0, err
			}
			n++
		}
		best = min(best, time.Since(start)/time.Duration(n))
	}
	return best, nil
}

// slope returns the least-squares slope of log(y) against log(x).
func slope(x, y []float64) float64 {
	var sx, sy, sxx, sxy float64
	k := float64(len(x))
	for i := range x {
		lx, ly := math.Log(x[i]), math.Log(y[i])
		sx, sy, sxx, sxy = sx+lx, sy+ly, sxx+lx*lx, sxy+lx*ly
	}
	d := k*sxx - sx*sx
	if d == 0 {
		return math.NaN()
	}
	return (k*sxy - sx*sy) / d
}

func runValidate(ctx context.Context, s *section) error {
	o := s.o
	shapes := []struct {
		name   string
		zigzag bool
	}{{"circle", false}, {"zigzag", true}}
	s.line("Time of one call on a Feature holding one Polygon of n vertices (the generators of `geojson/bench_test.go`: a circle,")
	s.line("and a zigzag star whose radius alternates between 0.8 and 1.0), each the best of 5 batch means within %v after a checked first call (a call slower than half of that is timed once);", o.valTime)
	s.line("throughput is input bytes per second. The exponent is the least-squares slope of log(time) against log(n) over n = %s:", intList(o.vertices))
	s.line("1 is linear. simplefeatures is a comparison in the benchmark only; geoidem does not depend on it.")
	s.line("")
	for _, v := range validators {
		s.line("- **%s**: %s", v.name, v.note)
	}
	s.line("")
	header := []string{"implementation", "shape"}
	for _, n := range o.vertices {
		header = append(header, fmt.Sprintf("n=%d MB/s", n), fmt.Sprintf("n=%d time", n))
	}
	header = append(header, "exponent")
	var rows [][]string
	var chart []series
	exps := map[string]float64{}
	mbps := map[string]float64{}
	for _, sh := range shapes {
		inputs := make([][]byte, len(o.vertices))
		for i, n := range o.vertices {
			inputs[i] = benchPolygon(n, sh.zigzag)
		}
		for _, v := range validators {
			row := []string{v.name, sh.name}
			sr := series{name: v.name + " " + sh.name}
			for i, n := range o.vertices {
				d, err := timeOp(ctx, v.run, inputs[i], o.valTime)
				if err != nil {
					return fmt.Errorf("%s on %s-%d: %w", v.name, sh.name, n, err)
				}
				rate := float64(len(inputs[i])) / d.Seconds() / 1e6
				row = append(row, fmt.Sprintf("%.1f", rate), fmtDur(d))
				sr.x, sr.y = append(sr.x, float64(n)), append(sr.y, ms(d))
				mbps[fmt.Sprintf("%s/%s/%d", v.name, sh.name, n)] = rate
			}
			e := slope(sr.x, sr.y)
			exps[v.name+"/"+sh.name] = e
			row = append(row, fmt.Sprintf("%.2f", e))
			rows = append(rows, row)
			chart = append(chart, sr)
			o.logf("validate: %s %s done", v.name, sh.name)
		}
	}
	s.table(header, rows)
	for k, sh := range shapes {
		if err := s.figure("validate-"+sh.name+".svg", "time per call vs vertices, "+sh.name, lineChart{
			title: "Validation time per call, " + sh.name + " polygon", xLabel: "vertices (log)", yLabel: "ms per call (log)",
			logX: true, logY: true, series: chart[k*len(validators) : (k+1)*len(validators)],
		}.render()); err != nil {
			return err
		}
	}
	if err := runParseSpeed(ctx, s); err != nil {
		return err
	}
	big := o.vertices[len(o.vertices)-1]
	for _, sh := range shapes {
		g := mbps[fmt.Sprintf("geojson.Validate/%s/%d", sh.name, big)]
		gg := mbps[fmt.Sprintf("go-geom decode only/%s/%d", sh.name, big)]
		sf := mbps[fmt.Sprintf("simplefeatures validating/%s/%d", sh.name, big)]
		s.headline(fmt.Sprintf("geojson.Validate, %s of %d vertices", sh.name, big),
			"%.0f MB/s = %.1f× go-geom decode-only, %.1f× simplefeatures validating; exponent %.2f (simplefeatures %.2f)",
			g, g/gg, g/sf, exps["geojson.Validate/"+sh.name], exps["simplefeatures validating/"+sh.name])
	}
	return nil
}

// parseSpeedRounds is how many times each input of the Validate ÷
// json.Valid table is timed, the two in turn, keeping each one's best.
const parseSpeedRounds = 3

// parseSpeedGoal is the goal for geojson.Validate's speed as a share of
// encoding/json.Valid's, on every input: at least as fast.
const parseSpeedGoal = 1.0

// runParseSpeed writes the Validate ÷ json.Valid table: geojson.Validate's
// speed as a share of encoding/json.Valid's on the same bytes, each ratio
// next to its goal.
func runParseSpeed(ctx context.Context, s *section) error {
	o := s.o
	s.line("")
	s.line("### Validate ÷ json.Valid")
	s.line("")
	s.line("`geojson.Validate` (every check: RFC 7946, I-JSON, OGC validity) against `encoding/json.Valid` (JSON syntax only) on the same bytes (`testkit.ParseSpeedInputs`).")
	s.line("Each is timed %d times, the two in turn, each time the best of 5 batch means within %v after a checked first call; the table keeps each one's best.", parseSpeedRounds, o.valTime)
	s.line("The ratio is json.Valid's time over Validate's: Validate's speed as a share of json.Valid's. Goal: at least %.1f on every input.", parseSpeedGoal)
	s.line("Allocations are `runtime.MemStats.Mallocs` over one warm Validate call. For stable comparisons between versions use instruction counts (`valgrind --tool=callgrind`), not times, on this shared machine.")
	s.line("")
	valid := func(d []byte) error {
		if !json.Valid(d) {
			return errors.New("not JSON")
		}
		return nil
	}
	validate := func(d []byte) error { return geojson.Validate(d, geojson.Options{}) }
	var rows [][]string
	worst := math.Inf(1)
	worstName := ""
	for _, in := range testkit.ParseSpeedInputs() {
		var best [2]time.Duration
		var rounds []float64 // each round's ratio
		for range parseSpeedRounds {
			var d [2]time.Duration
			for i, fn := range [2]func([]byte) error{validate, valid} {
				var err error
				if d[i], err = timeOp(ctx, fn, in.Data, o.valTime); err != nil {
					return fmt.Errorf("%s: %w", in.Name, err)
				}
				if best[i] == 0 || d[i] < best[i] {
					best[i] = d[i]
				}
			}
			rounds = append(rounds, d[1].Seconds()/d[0].Seconds())
		}
		_ = validate(in.Data) // warm: the pools filled
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		_ = validate(in.Data)
		runtime.ReadMemStats(&m1)
		r := best[1].Seconds() / best[0].Seconds()
		met := "yes"
		if r < parseSpeedGoal {
			met = "no"
		}
		s.goal(ratioGoal(fmt.Sprintf("geojson.Validate ÷ encoding/json.Valid, %s (speed)", in.Name), r, rounds, parseSpeedGoal))
		if r < worst {
			worst, worstName = r, in.Name
		}
		rows = append(rows, []string{in.Name, fmt.Sprint(len(in.Data)), fmtShortDur(best[0]), fmtShortDur(best[1]),
			fmt.Sprintf("%.3f", r), fmt.Sprintf("≥ %.1f", parseSpeedGoal), met, fmt.Sprint(m1.Mallocs - m0.Mallocs)})
		o.logf("validate: %s ÷ json.Valid done", in.Name)
	}
	s.table([]string{"input", "bytes", "Validate", "json.Valid", "ratio", "goal", "met", "Validate allocs/call"}, rows)
	s.headline("geojson.Validate ÷ encoding/json.Valid (speed)", "at least %.3f on every input (lowest: %s); goal ≥ %.1f", worst, worstName, parseSpeedGoal)
	return nil
}

// fmtShortDur is fmtDur, with nanoseconds below 10 µs.
func fmtShortDur(d time.Duration) string {
	if d < 10*time.Microsecond {
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	}
	return fmtDur(d)
}
