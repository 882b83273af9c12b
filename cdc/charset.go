package cdc

import (
	"fmt"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// charsetDecoder returns the decoder from a MySQL character set to UTF-8,
// nil for charsets whose bytes already are UTF-8.
func charsetDecoder(charset string) (*encoding.Decoder, error) {
	var enc encoding.Encoding
	switch charset {
	case "utf8mb4", "utf8mb3", "utf8", "ascii":
		return nil, nil
	case "latin1": // MySQL's latin1 is Windows-1252
		enc = charmap.Windows1252
	case "latin2":
		enc = charmap.ISO8859_2
	case "cp1250":
		enc = charmap.Windows1250
	case "cp1251":
		enc = charmap.Windows1251
	case "cp1256":
		enc = charmap.Windows1256
	case "cp1257":
		enc = charmap.Windows1257
	case "greek":
		enc = charmap.ISO8859_7
	case "hebrew":
		enc = charmap.ISO8859_8
	case "koi8r":
		enc = charmap.KOI8R
	case "koi8u":
		enc = charmap.KOI8U
	case "gbk", "gb2312":
		enc = simplifiedchinese.GBK
	case "gb18030":
		enc = simplifiedchinese.GB18030
	case "big5":
		enc = traditionalchinese.Big5
	case "sjis", "cp932":
		enc = japanese.ShiftJIS
	case "ujis", "eucjpms":
		enc = japanese.EUCJP
	case "euckr":
		enc = korean.EUCKR
	default:
		return nil, fmt.Errorf("character set %q cannot be decoded yet: convert the column to utf8mb4 or exclude it (source.exclude_columns)", charset)
	}
	return enc.NewDecoder(), nil
}

// memberNames decodes the ENUM or SET member names a table map carries,
// which are in the column's charset (collation coll; 0 when the binlog
// names none, and the bytes are taken as they are), into UTF-8: a latin1
// "\xfcn\xef" is "ünï", as the snapshot reads it.
func memberNames(raw []string, coll uint64, charsetOf func(uint64) string) ([]string, error) {
	if coll == 0 {
		return raw, nil
	}
	charset := charsetOf(coll)
	if charset == "binary" {
		return raw, nil
	}
	dec, err := charsetDecoder(charset)
	if err != nil || dec == nil {
		return raw, err
	}
	names := make([]string, len(raw))
	for i, m := range raw {
		if names[i], err = dec.String(m); err != nil {
			return nil, fmt.Errorf("decoding member %q from %s: %w", m, charset, err)
		}
	}
	return names, nil
}
