package geojson

import (
	"encoding/binary"
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
	if f, start, ok := p.numFast(); ok {
		return f, p.data[start:p.i]
	}
	return p.numSlow()
}

// numFast reads the usual number, with no exponent and at most 19
// digits, of which at most 15 before the point, whose digits make an
// integer below 2^53: then it is that integer divided by a power of ten,
// both exact, so the quotient is correctly rounded. It reports false,
// consuming nothing, for any other number.
func (p *parser) numFast() (f float64, start int, ok bool) {
	f, j, ok := scanNum(p.data, p.i)
	if !ok {
		return 0, 0, false
	}
	start = p.i
	p.i = j
	return f, start, true
}

// scanNum is numFast on d from index start, without the parser: it
// returns the number and the index just past it.
func scanNum(d []byte, start int) (f float64, end int, ok bool) {
	if start >= len(d) {
		return 0, 0, false
	}
	s := d[start:] // indices from the number's first byte
	i := 0
	neg := s[0] == '-'
	if neg {
		i = 1
	}
	var mant uint64
	j := i
	for ; j < len(s); j++ {
		c := s[j] - '0'
		if c >= 10 {
			break
		}
		mant = mant*10 + uint64(c)
	}
	nint := j - i
	// 1 to 15 integer digits, no leading zero.
	if uint(nint-1) >= 15 || (nint > 1 && s[i] == '0') {
		return 0, 0, false
	}
	nfrac := 0
	if j < len(s) && s[j] == '.' {
		k := j + 1
		if len(s)-k >= 8 {
			if v, ok := eightDigits(binary.LittleEndian.Uint64(s[k:])); ok {
				mant = mant*1e8 + v
				k += 8
			}
		}
		// At most 19 fraction digits are read: more fail below anyway.
		for lim := min(len(s), j+20); k < lim; k++ {
			c := s[k] - '0'
			if c >= 10 {
				break
			}
			mant = mant*10 + uint64(c)
		}
		nfrac = k - j - 1
		if nfrac == 0 || nint+nfrac > 19 {
			return 0, 0, false
		}
		j = k
	}
	// No exponent, nor a digit beyond those read.
	if j < len(s) {
		if c := s[j]; c|0x20 == 'e' || c-'0' < 10 {
			return 0, 0, false
		}
	}
	if mant >= 1<<53 {
		return 0, 0, false
	}
	f = float64(mant) / pow10[nfrac]
	if neg {
		f = -f
	}
	return f, start + j, true
}

// numSlow is num for any number.
func (p *parser) numSlow() (float64, []byte) {
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
	e := 0 // the exponent written after 'e'
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
		// Eight digits at a time while they all count (mant is not 0, so
		// leading zeros are behind) and fit mant.
		for mant != 0 && digits <= 19-8 && i+8 <= len(d) {
			v, ok := eightDigits(binary.LittleEndian.Uint64(d[i:]))
			if !ok {
				break
			}
			mant = mant*1e8 + v
			digits += 8
			exp10 -= 8
			i += 8
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
		eneg := d[i-1] == '-'
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			if e < 1<<20 {
				e = e*10 + int(d[i]-'0')
			}
			i++
		}
		if eneg {
			e = -e
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
	// A number beyond float64 is ±Inf without strconv, whose range error
	// allocates: found by its decimal magnitude, and at magnitude 308 by
	// its digits against the least number that rounds to infinity.
	if mag := digits - 1 + exp10 + e; digits > 0 && (mag > 308 || mag == 308 && !belowOverflow(raw)) {
		if neg {
			return math.Inf(-1), raw
		}
		return math.Inf(1), raw
	}
	f, err := strconv.ParseFloat(unsafe.String(&raw[0], len(raw)), 64)
	if err != nil && !math.IsInf(f, 0) && f != 0 {
		// Syntax was checked above; any other error cannot happen.
		p.fail("invalid number")
	}
	return f, raw
}

// overflowDigits are the digits of 2^1024 - 2^970, the least number that
// rounds to infinity as a float64 (it is halfway between MaxFloat64 and
// 2^1024, and rounds to even).
const overflowDigits = "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792"

// belowOverflow reports whether the JSON number raw, of decimal magnitude
// 308, is below 2^1024 - 2^970: its significant digits compared with
// overflowDigits.
func belowOverflow(raw []byte) bool {
	k := 0
	for _, c := range raw {
		switch {
		case c == 'e' || c == 'E':
			return k < len(overflowDigits) // the rest of overflowDigits is not all zeros
		case c < '0' || c > '9', k == 0 && c == '0':
			continue // sign, point, leading zeros
		case k == len(overflowDigits):
			if c != '0' {
				return false
			}
		default:
			if c != overflowDigits[k] {
				return c < overflowDigits[k]
			}
			k++
		}
	}
	return k < len(overflowDigits)
}

// eightDigits returns the value of the eight ASCII decimal digits in v
// (little-endian, the first digit in the low byte), and false when they
// are not all digits.
func eightDigits(v uint64) (uint64, bool) {
	const zeros, high = 0x3030303030303030, 0xF0F0F0F0F0F0F0F0
	// Every byte in '0'..'9': its high nibble is 3, and adding 6 keeps it 3.
	if v&high != zeros || (v+0x0606060606060606)&high != zeros {
		return 0, false
	}
	v -= zeros
	v = (v * 10) + (v >> 8) // pairs of digits in the even bytes
	v = ((v & 0x000000FF000000FF) * (100 + (1000000 << 32))) + (((v >> 16) & 0x000000FF000000FF) * (1 + (10000 << 32)))
	return v >> 32, true
}
