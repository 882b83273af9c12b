package expr

import (
	"math"
	"math/bits"
	"strconv"
)

// small is a decimal that fits an int64 once scaled: v × 10^-scale. The
// projector's decimals are mostly such (money, ratios); computing them
// without math/big keeps Eval free of allocations but the result's text.
// Every operation reports ok=false when it would overflow, and the caller
// takes the exact math/big path instead.
type small struct {
	v     int64
	scale int
}

var pow10s = func() [19]uint64 {
	var p [19]uint64
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// smallOf reads an integer or a decimal of at most 18 digits.
func smallOf(d Datum) (small, bool) {
	switch d.Kind {
	case KindInt:
		return small{v: d.I}, true
	case KindUint:
		return small{v: int64(d.U)}, d.U <= math.MaxInt64
	case KindDecimal:
		s := d.S
		neg := false
		if s != "" && s[0] == '-' {
			neg, s = true, s[1:]
		}
		if len(s) == 0 || len(s) > 19 {
			return small{}, false
		}
		var v uint64
		scale, point := 0, false
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '.' && !point:
				point = true
			case c >= '0' && c <= '9':
				v = v*10 + uint64(c-'0')
				if point {
					scale++
				}
			default:
				return small{}, false
			}
		}
		if v > math.MaxInt64/10 { // at most 18 digits
			return small{}, false
		}
		if neg {
			return small{v: -int64(v), scale: scale}, true
		}
		return small{v: int64(v), scale: scale}, true
	}
	return small{}, false
}

// mulPow scales v by 10^n, if it fits.
func mulPow(v int64, n int) (int64, bool) {
	if n < 0 || n >= len(pow10s) {
		return 0, n == 0
	}
	hi, lo := bits.Mul64(abs64(v), pow10s[n])
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	if v < 0 {
		return -int64(lo), true
	}
	return int64(lo), true
}

func (x small) align(y small) (int64, int64, int, bool) {
	switch {
	case x.scale == y.scale:
		return x.v, y.v, x.scale, true
	case x.scale > y.scale:
		b, ok := mulPow(y.v, x.scale-y.scale)
		return x.v, b, x.scale, ok
	}
	a, ok := mulPow(x.v, y.scale-x.scale)
	return a, y.v, y.scale, ok
}

func (x small) add(y small) (small, bool) {
	a, b, s, ok := x.align(y)
	r := a + b
	if !ok || (r > a) != (b > 0) {
		return small{}, false
	}
	return small{r, s}, true
}

func (x small) sub(y small) (small, bool) {
	if y.v == math.MinInt64 {
		return small{}, false
	}
	return x.add(small{-y.v, y.scale})
}

func (x small) mul(y small) (small, bool) {
	hi, lo := bits.Mul64(abs64(x.v), abs64(y.v))
	if hi != 0 || lo > math.MaxInt64 || x.scale+y.scale > 18 {
		return small{}, false
	}
	r := int64(lo)
	if (x.v < 0) != (y.v < 0) {
		r = -r
	}
	return small{r, x.scale + y.scale}, true
}

// quo is x / y at scale s, truncated (y is not zero).
func (x small) quo(y small, s int) (small, bool) {
	shift := s + y.scale - x.scale
	num, den := abs64(x.v), abs64(y.v)
	var hi, lo uint64
	switch {
	case shift >= len(pow10s) || -shift >= len(pow10s):
		return small{}, false
	case shift >= 0:
		hi, lo = bits.Mul64(num, pow10s[shift])
	default:
		var dh uint64
		dh, den = bits.Mul64(den, pow10s[-shift])
		if dh != 0 {
			return small{}, false
		}
		lo = num
	}
	if hi >= den {
		return small{}, false
	}
	q, _ := bits.Div64(hi, lo, den)
	if q > math.MaxInt64 {
		return small{}, false
	}
	r := int64(q)
	if (x.v < 0) != (y.v < 0) {
		r = -r
	}
	return small{r, s}, true
}

func (x small) rem(y small) (small, bool) {
	a, b, s, ok := x.align(y)
	if !ok || b == 0 || b == -1 {
		return small{0, s}, ok && b == -1
	}
	return small{a % b, s}, true
}

// round gives x at scale s ≤ x.scale, half away from zero.
func (x small) round(s int) small {
	if s >= x.scale {
		v, _ := mulPow(x.v, s-x.scale)
		return small{v, s}
	}
	p := int64(pow10s[x.scale-s])
	q, m := x.v/p, x.v%p
	if m < 0 {
		m = -m
	}
	if 2*m >= p {
		if x.v < 0 {
			q--
		} else {
			q++
		}
	}
	return small{q, s}
}

func (x small) datum() Datum {
	var buf [24]byte
	b := strconv.AppendUint(buf[:0], abs64(x.v), 10)
	var out [26]byte
	o := out[:0]
	if x.v < 0 {
		o = append(o, '-')
	}
	if x.scale > 0 {
		for len(b) <= x.scale {
			b = append([]byte{'0'}, b...)
		}
		o = append(o, b[:len(b)-x.scale]...)
		o = append(o, '.')
		o = append(o, b[len(b)-x.scale:]...)
	} else {
		o = append(o, b...)
	}
	return Datum{Kind: KindDecimal, S: string(o), Frac: uint8(x.scale)}
}
