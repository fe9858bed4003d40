package geojson

import (
	"strconv"
	"sync"
)

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
	bbox     []float64
	raw      []byte // the Feature object as in the input
	rawProps []byte // its "properties" value as in the input
}

// buildMode is what a parse builds besides checking.
type buildMode uint8

const (
	buildNone  buildMode = iota // Validate: nothing
	buildSpans                  // DecodeDocument: features, properties as raw sub-slices
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

	probs     []Violation
	nerr      int
	truncated bool

	npos       int
	arena      []float64
	arenaGiven bool     // geometries returned to the caller hold the arena
	leaves     []*gnode // coordinate-bearing geometries in document order
	gblock     []gnode  // the block newGnode takes gnodes from
	gnext      int      // the next gnode of gblock to take
	gcount     int      // gnodes taken in this parse
	ends       []int    // scratch for the geometry being parsed
	pends      []int
	dims       int       // dimensions of the current geometry's first good position
	mixed      bool      // the current geometry mixes dimensions
	ms         []float64 // M of each position of the current geometry, while all have one
	zs         []float64 // altitude (0 for 2D) of each position of the current geometry
	closed     []uint8   // per entry of ends: closedXY, closedZ
	lastClosed uint8     // closedXY, closedZ of the last level-1 array
	gBefore    int       // nerr when the current geometry began

	feats       []fnode // the root's Features (decodes only), in fbuf
	fbuf        []fnode // Features of the "features" arrays being parsed
	fused       int     // the most of fbuf in use at once, to clear
	rootGeo     *gnode
	rootBB      []float64
	rootFeature bool // the root is a Feature, not a FeatureCollection

	sweep *sweeper // checkPolygons' buffers, reused across polygons and calls

	relSteps int // steps of checkPolygons' ring relation pass, for tests
}

// parse runs the single pass over data. It returns a *SyntaxError for
// malformed JSON, a *ValidationError for invalid GeoJSON, or nil.
func parse(data []byte, o Options, build buildMode) (p *parser, err error) {
	p = getParser(data, o.resolved(), build)
	if len(data) > p.o.MaxBytes {
		if p.listing() {
			p.report(RuleLimitBytes, "input of "+strconv.Itoa(len(data))+" bytes exceeds the limit of "+strconv.Itoa(p.o.MaxBytes))
		}
		return p, p.validationError()
	}
	// The arena is pooled with the parser until a decode hands it to the
	// geometries it returns (parser.geometry), so a rejected decode
	// leaves it for the next call. A decode takes a pooled arena only
	// when it is at most 4 times the size this input starts with: its
	// geometries never keep one many times the size of their document.
	if n := len(data)/8 + 16; cap(p.arena) < n || (build != buildNone && cap(p.arena) > 4*n) {
		p.arena = make([]float64, 0, n)
	}
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
		if p.listing() {
			p.report(RuleRootNotObject, "a GeoJSON document must be an object, not "+kindOf(c))
		}
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
	return &ValidationError{Violations: p.probs, Truncated: p.truncated}
}

// parserPool recycles parsers and their scratch (path, names, ends, the
// arena of Validate, the sweep buffers) across calls, so a warm call
// allocates little more than what it returns.
var parserPool = sync.Pool{New: func() any { return new(parser) }}

// getParser returns a parser over data, with a pooled one's scratch: a
// pooled parser is new or was reset by release.
func getParser(data []byte, o Options, build buildMode) *parser {
	q := parserPool.Get().(*parser)
	q.data, q.o, q.build = data, o, build
	return q
}

// release returns p to the pool once nothing it built is in use but
// what the caller took: the problems and, for a decode that returned
// geometries, the arena stay with their new owners, and references into
// the input are dropped.
func (p *parser) release() {
	if p.arenaGiven {
		p.arena = nil
	}
	clear(p.path[:cap(p.path)])
	clear(p.names[:cap(p.names)])
	clear(p.leaves[:cap(p.leaves)])
	clear(p.fbuf[:p.fused])
	if p.gcount > len(p.gblock) {
		p.gblock = make([]gnode, p.gcount) // the next parse needs one block
	} else {
		// Drop what the gnodes taken from this block point to; the rest
		// of it is still zero, as newGnode leaves it and release does.
		clear(p.gblock[:p.gnext])
	}
	*p = parser{
		gblock: p.gblock,
		path:   p.path[:0], names: p.names[:0], leaves: p.leaves[:0], fbuf: p.fbuf[:0],
		ends: p.ends[:0], pends: p.pends[:0], ms: p.ms[:0], zs: p.zs[:0], closed: p.closed[:0],
		arena: p.arena[:0], sweep: p.sweep,
	}
	parserPool.Put(p)
}
