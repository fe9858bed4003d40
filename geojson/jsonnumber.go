package geojson

import (
	"math"
	"strconv"
	"unsafe"
)

// This file holds JSON numbers, read and correctly rounded in one pass.

var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// num reads a JSON number and returns its value, correctly rounded, and
// its raw text. A number too large for float64 yields ±Inf.
func (p *parser) num() (float64, []byte) {
	d := p.data
	start := p.i
	i := start
	neg := false
	if i < len(d) && d[i] == '-' {
		neg = true
		i++
	}
	var mant uint64
	digits := 0 // significant digits accumulated in mant
	exp10 := 0
	exact := true
	if i >= len(d) {
		p.i = i
		p.fail("invalid number")
	}
	switch {
	case d[i] == '0':
		i++
	case d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			if digits < 19 {
				mant = mant*10 + uint64(d[i]-'0')
				digits++
			} else {
				exact = false
				exp10++
			}
			i++
		}
	default:
		p.i = i
		p.fail("invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.i = i
			p.fail("invalid number: digit expected after '.'")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			if digits < 19 {
				if mant != 0 || d[i] != '0' {
					digits++
				}
				mant = mant*10 + uint64(d[i]-'0')
				exp10--
			} else {
				exact = false
			}
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.i = i
			p.fail("invalid number: digit expected in exponent")
		}
		exact = false // leave exponents to strconv
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	p.i = i
	raw := d[start:i]
	if exact && mant < 1<<53 && exp10 >= -22 && exp10 <= 0 {
		f := float64(mant) / pow10[-exp10]
		if neg {
			f = -f
		}
		return f, raw
	}
	f, err := strconv.ParseFloat(unsafe.String(&raw[0], len(raw)), 64)
	if err != nil && !math.IsInf(f, 0) && f != 0 {
		// Syntax was checked above; any other error cannot happen.
		p.fail("invalid number")
	}
	return f, raw
}
