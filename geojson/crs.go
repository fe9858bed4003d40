package geojson

// This file holds the "crs" member, which RFC 7946 removed, handled as
// Options.CRS says.

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
