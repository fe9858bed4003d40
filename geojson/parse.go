package geojson

import "strconv"

// gnode is a parsed geometry. Positions live in parser.arena, three
// float64s each while parsed; coordinates compacts 2D geometries to two.
type gnode struct {
	typ      gtype
	start    int   // arena offset of the first coordinate
	npos     int   // number of positions
	stride   int   // 2, 3 or 4 (XYZM) once finished
	ends     []int // cumulative position counts of lines or rings (level >= 2)
	polyEnds []int // cumulative ring counts of polygons (MultiPolygon)
	children []*gnode
	bad      bool // a problem was reported inside this geometry
}

// fnode is a parsed Feature.
type fnode struct {
	id       any // nil, string or json.Number
	geom     *gnode
	props    map[string]any
	bbox     []float64
	raw      []byte // the Feature object as in the input
	rawProps []byte // its "properties" value as in the input
}

// buildMode is what a parse builds besides checking.
type buildMode uint8

const (
	buildNone  buildMode = iota // Validate: nothing
	buildMaps                   // Decode: properties as map[string]any
	buildSpans                  // DecodeDocument: properties as raw sub-slices only
)

// ctx is what the enclosing value requires an object to be.
type ctx uint8

const (
	ctxRoot ctx = iota
	ctxFeature
	ctxGeometry
)

// parser is the state of one parse over one input.
type parser struct {
	data  []byte
	i     int
	o     Options
	build buildMode

	depth     int
	collDepth int
	path      []pathElem
	names     [][]byte
	quiet     int

	probs     []Problem
	nerr      int
	truncated bool

	npos   int
	arena  []float64
	leaves []*gnode // coordinate-bearing geometries in document order
	ends   []int    // scratch for the geometry being parsed
	pends  []int
	dims   int       // dimensions of the current geometry's first good position
	mixed  bool      // the current geometry mixes dimensions
	ms     []float64 // M of each position of the current geometry, while all have one

	feats       []fnode
	rootGeo     *gnode
	rootBB      []float64
	rootFeature bool // the root is a Feature, not a FeatureCollection

	relSteps int // steps of checkPolygons' ring relation pass, for tests
}

// parse runs the single pass over data. It returns a *SyntaxError for
// malformed JSON, a *ValidationError for invalid GeoJSON, or nil.
func parse(data []byte, o Options, build buildMode) (p *parser, err error) {
	p = &parser{data: data, o: o.resolved(), build: build}
	if len(data) > p.o.MaxBytes {
		p.report(RuleLimitBytes, "input of "+strconv.Itoa(len(data))+" bytes exceeds the limit of "+strconv.Itoa(p.o.MaxBytes))
		return p, p.validationError()
	}
	p.arena = make([]float64, 0, len(data)/8+16)
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(abort)
			if !ok {
				panic(r)
			}
			if a.err != nil {
				err = a.err
				return
			}
			err = p.validationError()
		}
	}()
	p.ws()
	if p.i >= len(p.data) {
		p.fail("empty input")
	}
	if p.data[p.i] == '{' {
		p.object(ctxRoot)
	} else {
		c := p.data[p.i]
		p.value(false)
		p.report(RuleRootNotObject, "a GeoJSON document must be an object, not "+kindOf(c))
	}
	p.ws()
	if p.i != len(p.data) {
		p.fail("unexpected data after the top-level value")
	}
	if p.nerr > 0 {
		return p, p.validationError()
	}
	return p, nil
}

func (p *parser) validationError() error {
	return &ValidationError{Problems: p.probs, Truncated: p.truncated}
}
