package cdc

import (
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/transform"
)

// latin1Decoder decodes MySQL's latin1 into UTF-8. MySQL's latin1 is
// Windows-1252 except for the five bytes Windows leaves undefined (0x81,
// 0x8D, 0x8F, 0x90, 0x9D): the server converts those to the C1 controls of
// the same number, where x/text's Windows-1252 gives U+FFFD — the binlog
// would publish other text than the snapshot reads.
func latin1Decoder() *encoding.Decoder { return &encoding.Decoder{Transformer: latin1Transformer{}} }

// latin1High is MySQL's latin1 from 0x80 to 0x9F; 0xA0–0xFF are the
// Unicode code points of the same number.
var latin1High = [32]rune{
	0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
	0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
}

type latin1Transformer struct{ transform.NopResetter }

func (latin1Transformer) Transform(dst, src []byte, atEOF bool) (nDst, nSrc int, err error) {
	for nSrc < len(src) {
		b := src[nSrc]
		r := rune(b)
		if b >= 0x80 && b < 0xA0 {
			r = latin1High[b-0x80]
		}
		if nDst+utf8.RuneLen(r) > len(dst) {
			return nDst, nSrc, transform.ErrShortDst
		}
		nDst += utf8.EncodeRune(dst[nDst:], r)
		nSrc++
	}
	return nDst, nSrc, nil
}
