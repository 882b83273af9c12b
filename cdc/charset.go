package cdc

import (
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"

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
	case "latin1": // Windows-1252 but for five bytes (latin1.go)
		return latin1Decoder(), nil
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

// queryClientCollation reads the client collation id a QUERY event's status
// variables carry (Q_CHARSET_CODE); 0 when they carry none or when a
// variable before it is one this reader cannot step over. The server writes
// the variables in code order, so only the codes before it need a length.
func queryClientCollation(vars []byte) uint64 {
	for len(vars) > 0 {
		code, rest := vars[0], vars[1:]
		var n int
		switch code {
		case 0: // Q_FLAGS2_CODE
			n = 4
		case 1: // Q_SQL_MODE_CODE
			n = 8
		case 2: // Q_CATALOG_CODE: length, name, NUL
			if len(rest) < 1 {
				return 0
			}
			n = 1 + int(rest[0]) + 1
		case 3: // Q_AUTO_INCREMENT
			n = 4
		case 4: // Q_CHARSET_CODE: client charset, connection and server collations
			if len(rest) < 6 {
				return 0
			}
			return uint64(rest[0]) | uint64(rest[1])<<8
		case 6: // Q_CATALOG_NZ_CODE: length, name
			if len(rest) < 1 {
				return 0
			}
			n = 1 + int(rest[0])
		default:
			return 0
		}
		if len(rest) < n {
			return 0
		}
		vars = rest[n:]
	}
	return 0
}

// ddlText is a QUERY event's statement as UTF-8: the binlog keeps the bytes
// the client sent, in its character set, so the ENUM and SET member names of
// a DDL sent under SET NAMES latin1 are latin1 bytes.
func ddlText(e *replication.QueryEvent, charsetOf func(uint64) string) (string, error) {
	coll := queryClientCollation(e.StatusVars)
	if coll == 0 {
		return string(e.Query), nil
	}
	charset := charsetOf(coll)
	if charset == "" || charset == "binary" {
		return string(e.Query), nil
	}
	dec, err := charsetDecoder(charset)
	if err != nil {
		return "", fmt.Errorf("statement sent in %s: %w", charset, err)
	}
	if dec == nil {
		return string(e.Query), nil
	}
	return dec.String(string(e.Query))
}
