package expr

import (
	"math/big"
	"strconv"
	"strings"
)

// dec is an exact decimal: u × 10^-scale. MySQL's DECIMAL arithmetic is
// exact up to 65 digits; math/big holds any of them.
type dec struct {
	u     big.Int
	scale int
}

var bigTen = big.NewInt(10)

func pow10(n int) *big.Int {
	return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil)
}

// parseDec reads [-+]digits[.digits] (what MySQL's decimals and the
// events' DECIMAL strings look like).
func parseDec(s string) (dec, bool) {
	var d dec
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	ip, fp, _ := strings.Cut(s, ".")
	if ip == "" && fp == "" {
		return d, false
	}
	for _, c := range ip + fp {
		if c < '0' || c > '9' {
			return d, false
		}
	}
	d.u.SetString("0"+ip+fp, 10)
	d.scale = len(fp)
	if neg {
		d.u.Neg(&d.u)
	}
	return d, true
}

func decFromInt(i int64) dec {
	var d dec
	d.u.SetInt64(i)
	return d
}

func decFromUint(u uint64) dec {
	var d dec
	d.u.SetUint64(u)
	return d
}

func (d dec) neg() dec {
	var r dec
	r.u.Neg(&d.u)
	r.scale = d.scale
	return r
}

// digits is the precision the value needs: its integer digits (at least
// one) plus its scale.
func (d dec) digits() int {
	s := new(big.Int).Abs(&d.u).String()
	ip := len(s) - d.scale
	if ip < 1 {
		ip = 1
	}
	if s == "0" {
		ip = 1
	}
	return ip + d.scale
}

// rescale gives d at scale s, rounding half away from zero as MySQL does.
func (d dec) rescale(s int) dec {
	var r dec
	r.scale = s
	switch {
	case s == d.scale:
		r.u.Set(&d.u)
	case s > d.scale:
		r.u.Mul(&d.u, pow10(s-d.scale))
	default:
		p := pow10(d.scale - s)
		q, m := new(big.Int).QuoRem(&d.u, p, new(big.Int))
		m.Abs(m).Lsh(m, 1)
		if m.Cmp(p) >= 0 {
			if d.u.Sign() < 0 {
				q.Sub(q, big.NewInt(1))
			} else {
				q.Add(q, big.NewInt(1))
			}
		}
		r.u.Set(q)
	}
	return r
}

// truncate gives d at scale s, dropping digits (toward zero).
func (d dec) truncate(s int) dec {
	if s >= d.scale {
		return d.rescale(s)
	}
	var r dec
	r.scale = s
	r.u.Quo(&d.u, pow10(d.scale-s))
	return r
}

func align(a, b dec) (*big.Int, *big.Int, int) {
	switch {
	case a.scale == b.scale:
		return &a.u, &b.u, a.scale
	case a.scale > b.scale:
		return &a.u, new(big.Int).Mul(&b.u, pow10(a.scale-b.scale)), a.scale
	}
	return new(big.Int).Mul(&a.u, pow10(b.scale-a.scale)), &b.u, b.scale
}

func (d dec) cmp(e dec) int { x, y, _ := align(d, e); return x.Cmp(y) }

func (d dec) add(e dec) dec {
	x, y, s := align(d, e)
	var r dec
	r.u.Add(x, y)
	r.scale = s
	return r
}

func (d dec) sub(e dec) dec { return d.add(e.neg()) }

func (d dec) mul(e dec) dec {
	var r dec
	r.u.Mul(&d.u, &e.u)
	r.scale = d.scale + e.scale
	return r
}

// divScale is the scale MySQL's decimal division computes d / e to
// (decimal.c do_div_mod): whole 9-digit words, the operands' fractions
// rounded up to words plus what of the increment they do not cover. The
// quotient is truncated there and only rounded to the result type's scale
// when it leaves the expression, so (1/3)*3 is 0.999999999, shown 1.0000.
func divScale(s1, s2, incr int) int {
	w1, w2 := (s1+8)/9*9, (s2+8)/9*9
	incr -= w1 - s1 + w2 - s2
	if incr < 0 {
		incr = 0
	}
	return (w1 + w2 + incr + 8) / 9 * 9
}

// quoTrunc is d / e at scale s, truncated toward zero; e is not zero.
func (d dec) quoTrunc(e dec, s int) dec {
	shift := s + e.scale - d.scale
	n := new(big.Int).Set(&d.u)
	m := new(big.Int).Set(&e.u)
	if shift >= 0 {
		n.Mul(n, pow10(shift))
	} else {
		m.Mul(m, pow10(-shift))
	}
	var r dec
	r.u.Quo(n, m)
	r.scale = s
	return r
}

// rem is d MOD e (the sign of d); e is not zero.
func (d dec) rem(e dec) dec {
	x, y, s := align(d, e)
	var r dec
	r.u.Rem(x, y)
	r.scale = s
	return r
}

func (d dec) sign() int { return d.u.Sign() }

// String is MySQL's text of the decimal: exactly scale fraction digits,
// no negative zero.
func (d dec) String() string {
	neg := d.u.Sign() < 0
	s := new(big.Int).Abs(&d.u).String()
	if d.scale > 0 {
		if len(s) <= d.scale {
			s = strings.Repeat("0", d.scale-len(s)+1) + s
		}
		s = s[:len(s)-d.scale] + "." + s[len(s)-d.scale:]
	}
	if neg {
		return "-" + s
	}
	return s
}

func (d dec) datum() Datum {
	return Datum{Kind: KindDecimal, S: d.String(), Frac: uint8(d.scale)}
}

func (d dec) float() float64 {
	f, _ := strconv.ParseFloat(d.String(), 64)
	return f
}

// int64 gives d rounded to an integer, and whether it fits.
func (d dec) int64() (int64, bool) {
	r := d.rescale(0)
	return r.u.Int64(), r.u.IsInt64()
}

func (d dec) uint64() (uint64, bool) {
	r := d.rescale(0)
	return r.u.Uint64(), r.u.IsUint64()
}
