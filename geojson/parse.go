package geojson

import (
	"encoding/json"
	"math"
	"strconv"
)

// gtype is a GeoJSON type.
type gtype uint8

const (
	tNone gtype = iota
	tPoint
	tMultiPoint
	tLineString
	tMultiLineString
	tPolygon
	tMultiPolygon
	tGeometryCollection
	tFeature
	tFeatureCollection
	tUnknown
)

var typeNames = [...]string{"", "Point", "MultiPoint", "LineString", "MultiLineString",
	"Polygon", "MultiPolygon", "GeometryCollection", "Feature", "FeatureCollection", ""}

func (t gtype) String() string { return typeNames[t] }

// hasCoordinates reports whether t is a geometry with "coordinates".
func (t gtype) hasCoordinates() bool { return t >= tPoint && t <= tMultiPolygon }

func (t gtype) isGeometry() bool { return t >= tPoint && t <= tGeometryCollection }

// level is the array nesting of t's coordinates above the positions.
func (t gtype) level() int {
	switch t {
	case tMultiPoint, tLineString:
		return 1
	case tPolygon, tMultiLineString:
		return 2
	case tMultiPolygon:
		return 3
	}
	return 0
}

func lookupType(s []byte) gtype {
	switch string(s) {
	case "Point":
		return tPoint
	case "MultiPoint":
		return tMultiPoint
	case "LineString":
		return tLineString
	case "MultiLineString":
		return tMultiLineString
	case "Polygon":
		return tPolygon
	case "MultiPolygon":
		return tMultiPolygon
	case "GeometryCollection":
		return tGeometryCollection
	case "Feature":
		return tFeature
	case "FeatureCollection":
		return tFeatureCollection
	}
	return tUnknown
}

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

// member identifiers of the GeoJSON object members the parser knows.
type mem uint8

const (
	mOther mem = iota
	mType
	mCoordinates
	mGeometries
	mGeometry
	mProperties
	mFeatures
	mBBox
	mID
	mCRS
)

func lookupMember(name []byte) mem {
	switch string(name) {
	case "type":
		return mType
	case "coordinates":
		return mCoordinates
	case "geometries":
		return mGeometries
	case "geometry":
		return mGeometry
	case "properties":
		return mProperties
	case "features":
		return mFeatures
	case "bbox":
		return mBBox
	case "id":
		return mID
	case "crs":
		return mCRS
	}
	return mOther
}

var memberNames = [...]string{"", "type", "coordinates", "geometries", "geometry", "properties", "features", "bbox", "id", "crs"}

// objResult is what object hands back to its parent.
type objResult struct {
	typ   gtype
	geom  *gnode
	feat  fnode
	feats []fnode
	bbox  []float64
}

// object parses a GeoJSON object (the current byte is '{'). Members
// whose meaning depends on "type" and that come before it are skipped
// and parsed again once "type" is known ("coordinates" only: geometry,
// geometries and features hold self-describing objects and are parsed
// at once), so each byte is parsed at most twice.
func (p *parser) object(c ctx) objResult {
	start := p.i
	p.enter()
	p.i++
	s := dupSet{mark: len(p.names)}
	var (
		typ        gtype
		seen       [len(memberNames)]bool
		kinds      [len(memberNames)]byte
		coordsAt   = -1
		g          *gnode
		geometries []*gnode
		geometry   *gnode
		feats      []fnode
		props      map[string]any
		rawProps   []byte
		id         any
		bbox       []float64
		bboxOK     bool
		leafMark   = len(p.leaves)
	)
	if p.peek() == '}' {
		p.i++
	} else {
		for {
			raw, name := p.member(&s)
			m := lookupMember(name)
			if m == mOther {
				p.pushKey(raw)
				p.value(false)
				p.pop()
				if !p.next('}') {
					break
				}
				continue
			}
			seen[m] = true
			kind := p.peek()
			kinds[m] = kind
			p.pushKey(raw)
			switch m {
			case mType:
				if kind != '"' {
					p.report(RuleWrongType, `"type" must be a string, not `+kindOf(kind))
					p.value(false)
					typ = tUnknown
					break
				}
				tr, _ := p.str()
				tname := unescapeName(tr)
				typ = lookupType(tname)
				if typ == tUnknown {
					msg := "unknown type " + strconv.Quote(string(tname))
					for k, n := range typeNames {
						if n != "" && len(n) == len(tname) && equalFold(n, tname) {
							msg += " (types are case-sensitive: did you mean " + strconv.Quote(typeNames[k]) + "?)"
						}
					}
					p.report(RuleUnknownType, msg)
				}
			case mCoordinates:
				switch {
				case typ.hasCoordinates() && g == nil:
					g = p.coordinates(typ)
				case typ == tNone:
					coordsAt = p.i
					p.quiet++
					p.value(false)
					p.quiet--
				default:
					p.value(false)
				}
			case mGeometries:
				if kind != '[' {
					p.value(false)
					break
				}
				p.collDepth++
				if p.collDepth > p.o.MaxCollectionDepth {
					p.limit(RuleLimitCollectionDepth, "GeometryCollections nested deeper than "+strconv.Itoa(p.o.MaxCollectionDepth))
				}
				p.enter()
				p.i++
				if p.peek() == ']' {
					p.i++
				} else {
					for n := 0; ; n++ {
						p.pushIdx(n)
						if k := p.peek(); k == '{' {
							r := p.object(ctxGeometry)
							if r.geom != nil {
								geometries = append(geometries, r.geom)
							}
						} else {
							p.report(RuleWrongType, "a GeometryCollection member must be a geometry object, not "+kindOf(k))
							p.value(false)
						}
						p.pop()
						if !p.next(']') {
							break
						}
					}
				}
				p.leave()
				p.collDepth--
				if geometries == nil {
					geometries = []*gnode{}
				}
			case mGeometry:
				if kind == '{' {
					geometry = p.object(ctxGeometry).geom
				} else {
					p.value(false)
				}
			case mFeatures:
				if kind != '[' {
					p.value(false)
					break
				}
				p.enter()
				p.i++
				if p.peek() == ']' {
					p.i++
				} else {
					for n := 0; ; n++ {
						p.pushIdx(n)
						if k := p.peek(); k == '{' {
							r := p.object(ctxFeature)
							if r.typ == tFeature {
								feats = append(feats, r.feat)
							}
						} else {
							p.report(RuleWrongType, "every member of \"features\" must be a Feature object, not "+kindOf(k))
							p.value(false)
						}
						p.pop()
						if !p.next(']') {
							break
						}
					}
				}
				p.leave()
			case mProperties:
				at := p.i
				v := p.value(p.build == buildMaps && kind == '{')
				props, _ = v.(map[string]any)
				rawProps = p.data[at:p.i:p.i]
			case mID:
				switch kind {
				case '"':
					r, _ := p.str()
					id = string(unescapeName(r))
				case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
					f, r := p.num()
					if math.IsInf(f, 0) { // as in value: I-JSON, RFC 7493 section 2.2
						p.report(RuleNumberTooLarge, "number "+string(r)+" does not fit a float64")
					}
					id = json.Number(r)
				default:
					p.value(false)
				}
			case mBBox:
				bbox, bboxOK = p.bbox(kind)
			case mCRS:
				p.crs(kind)
			}
			p.pop()
			if !p.next('}') {
				break
			}
		}
	}
	p.endDup(&s)
	if coordsAt >= 0 && typ.hasCoordinates() {
		save := p.i
		p.i = coordsAt
		p.pushKey([]byte("coordinates"))
		g = p.coordinates(typ)
		p.pop()
		p.i = save
	}

	forbid := func(ms ...mem) {
		for _, m := range ms {
			if seen[m] {
				what := typ.String()
				if typ.isGeometry() {
					what = "a " + what + " geometry"
				} else {
					what = "a " + what
				}
				p.report(RuleForbiddenMember, what+" must not have a "+strconv.Quote(memberNames[m])+
					" member: it would change GeoJSON semantics (RFC 7946 section 7.1)", memberNames[m])
			}
		}
	}
	require := func(m mem) bool {
		if !seen[m] {
			p.report(RuleMissingMember, "a "+typ.String()+" must have a "+strconv.Quote(memberNames[m])+" member")
			return false
		}
		return true
	}

	res := objResult{typ: typ}
	switch {
	case typ == tNone:
		p.report(RuleMissingMember, `a GeoJSON object must have a "type" member`)
	case typ == tUnknown:
	case c == ctxGeometry && !typ.isGeometry():
		p.report(RuleUnexpectedType, "expected a geometry, found a "+typ.String())
	case c == ctxFeature && typ != tFeature:
		p.report(RuleUnexpectedType, "every member of \"features\" must be a Feature, found a "+typ.String())
	case typ.hasCoordinates():
		forbid(mGeometries, mGeometry, mProperties, mFeatures)
		if require(mCoordinates) && g == nil {
			p.report(RuleWrongType, `"coordinates" must be an array`, "coordinates")
		}
		res.geom = g
	case typ == tGeometryCollection:
		forbid(mCoordinates, mGeometry, mProperties, mFeatures)
		if require(mGeometries) && kinds[mGeometries] != '[' {
			p.report(RuleWrongType, `"geometries" must be an array, not `+kindOf(kinds[mGeometries]), "geometries")
		}
		res.geom = &gnode{typ: tGeometryCollection, children: geometries}
	case typ == tFeature:
		forbid(mCoordinates, mGeometries, mFeatures)
		if require(mGeometry) && kinds[mGeometry] != '{' && kinds[mGeometry] != 'n' {
			p.report(RuleWrongType, `"geometry" must be an object or null, not `+kindOf(kinds[mGeometry]), "geometry")
		}
		if require(mProperties) && kinds[mProperties] != '{' && kinds[mProperties] != 'n' {
			p.report(RuleWrongType, `"properties" must be an object or null, not `+kindOf(kinds[mProperties]), "properties")
		}
		if seen[mID] && id == nil {
			p.report(RuleWrongType, `"id" must be a string or a number, not `+kindOf(kinds[mID]), "id")
		}
		res.feat = fnode{id: id, geom: geometry, props: props, bbox: bbox, raw: p.data[start:p.i:p.i], rawProps: rawProps}
	case typ == tFeatureCollection:
		forbid(mCoordinates, mGeometries, mGeometry, mProperties)
		if require(mFeatures) && kinds[mFeatures] != '[' {
			p.report(RuleWrongType, `"features" must be an array, not `+kindOf(kinds[mFeatures]), "features")
		}
		res.feats = feats
	}
	if bboxOK {
		p.checkBBoxContains(bbox, p.leaves[leafMark:])
		res.bbox = bbox
	}
	if c == ctxRoot {
		p.feats = res.feats
		switch {
		case typ == tFeature:
			p.feats = []fnode{res.feat}
			p.rootFeature = true
		case typ.isGeometry():
			p.rootGeo = res.geom
		}
		p.rootBB = bbox
	}
	p.leave()
	return res
}

func equalFold(a string, b []byte) bool {
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// bbox parses a "bbox" value and checks it on its own: length, element
// types, order and range. It reports whether the bbox is usable for the
// containment check.
func (p *parser) bbox(kind byte) ([]float64, bool) {
	if kind != '[' {
		p.report(RuleWrongType, `"bbox" must be an array of numbers, not `+kindOf(kind))
		p.value(false)
		return nil, false
	}
	p.enter()
	p.i++
	var b []float64
	ok := true
	if p.peek() == ']' {
		p.i++
	} else {
		for n := 0; ; n++ {
			if k := p.peek(); k == '-' || (k >= '0' && k <= '9') {
				f, _ := p.num()
				if math.IsInf(f, 0) {
					p.report(RuleBBoxElement, "bbox element is not a finite number", n)
					ok = false
				}
				b = append(b, f)
			} else {
				p.report(RuleBBoxElement, "bbox element must be a number, not "+kindOf(k), n)
				p.pushIdx(n)
				p.value(false)
				p.pop()
				ok = false
				b = append(b, 0)
			}
			if !p.next(']') {
				break
			}
		}
	}
	p.leave()
	if !ok {
		return b, false
	}
	if len(b) != 4 && len(b) != 6 {
		p.report(RuleBBoxLength, "bbox must have 4 elements (2D) or 6 (3D), not "+strconv.Itoa(len(b)))
		return b, false
	}
	n := len(b) / 2
	for axis := range n {
		lo, hi := b[axis], b[axis+n]
		if axis == 0 {
			if lo < -180 || lo > 180 || hi < -180 || hi > 180 {
				p.report(RuleBBoxRange, "bbox longitudes must lie in [-180, 180]")
				ok = false
			}
			// west > east is a bbox crossing the antimeridian (RFC 7946 section 5.2).
			continue
		}
		if axis == 1 && (lo < -90 || lo > 90 || hi < -90 || hi > 90) {
			p.report(RuleBBoxRange, "bbox latitudes must lie in [-90, 90]")
			ok = false
		}
		if lo > hi {
			p.report(RuleBBoxOrder, "bbox minimum "+strconv.FormatFloat(lo, 'g', -1, 64)+
				" exceeds its maximum "+strconv.FormatFloat(hi, 'g', -1, 64)+" on axis "+strconv.Itoa(axis))
			ok = false
		}
	}
	return b, ok
}

// checkBBoxContains reports the first position of leaves outside b.
func (p *parser) checkBBoxContains(b []float64, leaves []*gnode) {
	n := len(b) / 2
	w, s, e, nn := b[0], b[1], b[n], b[n+1]
	for _, g := range leaves {
		if g.bad {
			continue
		}
		for k := range g.npos {
			o := g.start + k*g.stride
			x, y := p.arena[o], p.arena[o+1]
			in := y >= s && y <= nn
			if w <= e {
				in = in && x >= w && x <= e
			} else {
				in = in && (x >= w || x <= e)
			}
			if in && n == 3 && g.stride >= 3 {
				z := p.arena[o+2]
				in = z >= b[2] && z <= b[5]
			}
			if !in {
				p.report(RuleBBoxExcludesGeometry, "position "+fmtPos(p.arena[o:o+g.stride])+" lies outside the bbox", "bbox")
				return
			}
		}
	}
}

func fmtPos(v []float64) string {
	b := []byte{'['}
	for i, f := range v {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	return string(append(b, ']'))
}

var wgs84Names = map[string]bool{
	"urn:ogc:def:crs:OGC:1.3:CRS84": true,
	"urn:ogc:def:crs:OGC::CRS84":    true,
	"urn:ogc:def:crs:EPSG::4326":    true,
	"urn:ogc:def:crs:EPSG:6.6:4326": true,
	"EPSG:4326":                     true,
	"CRS84":                         true,
}

// crs parses a "crs" member and applies Options.CRS.
func (p *parser) crs(kind byte) {
	switch p.o.CRS {
	case CRSIgnore:
		p.value(false)
		return
	case CRSReject:
		p.value(false)
		p.report(RuleCRS, `the "crs" member was removed by RFC 7946 and is not accepted`)
		return
	}
	v := p.value(kind == '{')
	if m, ok := v.(map[string]any); ok && m["type"] == "name" {
		if props, ok := m["properties"].(map[string]any); ok {
			if name, ok := props["name"].(string); ok && wgs84Names[name] {
				return
			}
		}
	}
	p.report(RuleCRS, `"crs" must name OGC CRS84 or EPSG:4326, the only coordinate reference system of RFC 7946`)
}
