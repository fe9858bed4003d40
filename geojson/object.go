package geojson

import (
	"encoding/json"
	"math"
	"strconv"
)

// This file holds the parser's GeoJSON objects: the member table and
// object, which parses the members of any GeoJSON object and checks them
// against its type.

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

// idSeen stands, for Validate, for an "id" of the right type: nothing
// reads it, so it is not built.
var idSeen any = json.Number("")

// objResult is what object hands back to its parent; a Feature of a
// "features" array goes to p.fbuf instead.
type objResult struct {
	typ  gtype
	geom *gnode
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
		featMark   = len(p.fbuf)
		rawProps   []byte
		id         any
		bbox       []float64
		bboxOK     bool
		feat       fnode // a Feature's, for a decode
		leafMark   = len(p.leaves)
	)
	if p.peek() == '}' {
		p.i++
	} else {
		for {
			raw, name := p.memberName()
			// The members the parser knows are told apart by seen, the
			// others by the names stack: a name is one or the other.
			m := lookupMember(name)
			if m == mOther && p.seen(&s, name) || m != mOther && seen[m] {
				p.duplicate(name)
			}
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
				typ = p.typeMember(kind)
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
				geometries = p.geometriesMember(geometries)
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
				p.featuresMember()
			case mProperties:
				at := p.i
				p.value(false)
				rawProps = p.data[at:p.i:p.i]
			case mID:
				switch kind {
				case '"':
					r, _ := p.str()
					if p.build == buildNone {
						id = idSeen // Validate only needs to know there is one
					} else {
						id = string(unescapeName(r))
					}
				case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
					f, r := p.num()
					if math.IsInf(f, 0) { // as in value: I-JSON, RFC 7493 section 2.2
						if p.listing() {
							p.report(RuleNumberTooLarge, "number "+string(r)+" does not fit a float64")
						}
					}
					if p.build == buildNone {
						id = idSeen
					} else {
						id = json.Number(r)
					}
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
				p.forbidden(typ, m)
			}
		}
	}
	require := func(m mem) bool {
		if !seen[m] {
			p.missing(typ, m)
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
		if p.listing() {
			p.report(RuleUnexpectedType, "expected a geometry, found a "+typ.String())
		}
	case c == ctxFeature && typ != tFeature:
		if p.listing() {
			p.report(RuleUnexpectedType, "every member of \"features\" must be a Feature, found a "+typ.String())
		}
	case typ.hasCoordinates():
		forbid(mGeometries, mGeometry, mProperties, mFeatures)
		if require(mCoordinates) && g == nil {
			p.report(RuleWrongType, `"coordinates" must be an array`, "coordinates")
		}
		res.geom = g
	case typ == tGeometryCollection:
		forbid(mCoordinates, mGeometry, mProperties, mFeatures)
		if require(mGeometries) && kinds[mGeometries] != '[' {
			if p.listing() {
				p.report(RuleWrongType, `"geometries" must be an array, not `+kindOf(kinds[mGeometries]), "geometries")
			}
		}
		res.geom = &gnode{typ: tGeometryCollection, children: geometries}
	case typ == tFeature:
		forbid(mCoordinates, mGeometries, mFeatures)
		if require(mGeometry) && kinds[mGeometry] != '{' && kinds[mGeometry] != 'n' {
			if p.listing() {
				p.report(RuleWrongType, `"geometry" must be an object or null, not `+kindOf(kinds[mGeometry]), "geometry")
			}
		}
		if require(mProperties) && kinds[mProperties] != '{' && kinds[mProperties] != 'n' {
			if p.listing() {
				p.report(RuleWrongType, `"properties" must be an object or null, not `+kindOf(kinds[mProperties]), "properties")
			}
		}
		if seen[mID] && id == nil {
			if p.listing() {
				p.report(RuleWrongType, `"id" must be a string or a number, not `+kindOf(kinds[mID]), "id")
			}
		}
		if p.build != buildNone { // Validate keeps no features
			feat = fnode{id: id, geom: geometry, bbox: bbox, raw: p.data[start:p.i:p.i], rawProps: rawProps}
		}
	case typ == tFeatureCollection:
		forbid(mCoordinates, mGeometries, mGeometry, mProperties)
		if require(mFeatures) && kinds[mFeatures] != '[' {
			if p.listing() {
				p.report(RuleWrongType, `"features" must be an array, not `+kindOf(kinds[mFeatures]), "features")
			}
		}
		if c == ctxRoot {
			p.feats = p.fbuf[featMark:len(p.fbuf):len(p.fbuf)]
		}
	}
	if bboxOK {
		p.checkBBoxContains(bbox, p.leaves[leafMark:])
	}
	if c == ctxRoot {
		switch {
		case typ == tFeature:
			if p.build != buildNone { // Validate keeps no features
				p.fbuf = append(p.fbuf[:featMark], feat)
				p.fused = max(p.fused, len(p.fbuf))
				p.feats = p.fbuf[featMark:]
			}
			p.rootFeature = true
		case typ.isGeometry():
			p.rootGeo = res.geom
		}
		p.rootBB = bbox
	} else {
		// Only the root's Features are read: those of any other object
		// that has a "features" member leave the scratch, so that the
		// Features of the root's array stay contiguous in it; a Feature of
		// an array takes its place there.
		p.fbuf = p.fbuf[:featMark]
		if c == ctxFeature && typ == tFeature && p.build != buildNone { // Validate keeps no features
			p.fbuf = appendScratch(p.fbuf, feat)
			p.fused = max(p.fused, len(p.fbuf))
		}
	}
	p.leave()
	return res
}

// forbidden reports member m, which an object of type typ must not have.
func (p *parser) forbidden(typ gtype, m mem) {
	if !p.listing() {
		return
	}
	what := typ.String()
	if typ.isGeometry() {
		what = "a " + what + " geometry"
	} else {
		what = "a " + what
	}
	p.report(RuleForbiddenMember, what+" must not have a "+strconv.Quote(memberNames[m])+
		" member: it would change GeoJSON semantics (RFC 7946 section 7.1)", memberNames[m])
}

// missing reports member m, which an object of type typ must have.
func (p *parser) missing(typ gtype, m mem) {
	if p.listing() {
		p.report(RuleMissingMember, "a "+typ.String()+" must have a "+strconv.Quote(memberNames[m])+" member")
	}
}

// typeMember parses a "type" value, whose first byte is kind, and returns
// the type it names: tUnknown, reported, for a name it does not know or a
// value that is not a string.
func (p *parser) typeMember(kind byte) (typ gtype) {
	if kind != '"' {
		if p.listing() {
			p.report(RuleWrongType, `"type" must be a string, not `+kindOf(kind))
		}
		p.value(false)
		typ = tUnknown
		return typ
	}
	tname, esc := p.str()
	if esc {
		tname = unescapeName(tname)
	}
	typ = lookupType(tname)
	if typ == tUnknown && p.listing() {
		msg := "unknown type " + strconv.Quote(string(tname))
		for k, n := range typeNames {
			if n != "" && len(n) == len(tname) && equalFold(n, tname) {
				msg += " (types are case-sensitive: did you mean " + strconv.Quote(typeNames[k]) + "?)"
			}
		}
		p.report(RuleUnknownType, msg)
	}
	return typ
}

// geometriesMember parses the array of a "geometries" member (the
// current byte is '[') and appends its geometries to geometries, which
// it returns non-nil.
func (p *parser) geometriesMember(geometries []*gnode) []*gnode {
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
				if p.listing() {
					p.report(RuleWrongType, "a GeometryCollection member must be a geometry object, not "+kindOf(k))
				}
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
	return geometries
}

// featuresMember parses the array of a "features" member (the current
// byte is '[') and, unless the parse is a Validate, appends its Features
// to p.fbuf, the pooled parser's scratch: a FeatureCollection of many
// small Features costs no allocation per Feature, nor the copies of a
// slice grown by append.
func (p *parser) featuresMember() {
	p.enter()
	p.i++
	if p.peek() == ']' {
		p.i++
	} else {
		for n := 0; ; n++ {
			p.pushIdx(n)
			if k := p.peek(); k == '{' {
				p.object(ctxFeature) // appends the Feature to p.fbuf
			} else {
				if p.listing() {
					p.report(RuleWrongType, "every member of \"features\" must be a Feature object, not "+kindOf(k))
				}
				p.value(false)
			}
			p.pop()
			if !p.next(']') {
				break
			}
		}
	}
	p.leave()
}
