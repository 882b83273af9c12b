package expr

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// connCollation is the collation of string literals: the session's
// collation_connection, utf8mb4_general_ci on the sessions readside opens
// (MariaDB's default for utf8mb4; MySQL 8's default is
// utf8mb4_0900_ai_ci, so a MySQL session must SET NAMES utf8mb4 COLLATE
// utf8mb4_general_ci for SQL's literals to mean what Eval's do).
const connCollation = "utf8mb4_general_ci"

func stringLit(s string, at int) *literal {
	n := utf8.RuneCountInString(s)
	return &literal{d: Datum{Kind: KindString, S: s, Coll: connCollation}, text: quoteString(s), at: at,
		typ: stringType(n, connCollation, false)}
}

// numberLit types a numeric literal as MySQL does: an integer that fits
// BIGINT is signed, one that fits BIGINT UNSIGNED is unsigned, a longer
// one and any with a point is DECIMAL, one with an exponent is DOUBLE.
func numberLit(t token) (node, error) {
	switch t.kind {
	case tInt:
		if i, err := strconv.ParseInt(t.text, 10, 64); err == nil {
			return intLit(i, t.pos), nil
		}
		if u, err := strconv.ParseUint(t.text, 10, 64); err == nil {
			return &literal{d: Datum{Kind: KindUint, U: u}, text: t.text, at: t.pos, typ: intType(KindUint, 20, false)}, nil
		}
		fallthrough
	case tDec:
		d, ok := parseDec(t.text)
		if !ok || d.digits() > maxDecimalPrec {
			return nil, errAt(t.pos, "the number %s has more than %d digits: MySQL cannot hold it exactly", t.text, maxDecimalPrec)
		}
		return decLit(d, t.pos), nil
	}
	f, err := strconv.ParseFloat(t.text, 64)
	if err != nil {
		return nil, errAt(t.pos, "the number %s is out of DOUBLE's range", t.text)
	}
	return &literal{d: Datum{Kind: KindDouble, F: f}, text: t.text, at: t.pos, typ: doubleType(false)}, nil
}

func intLit(i int64, at int) *literal {
	s := strconv.FormatInt(i, 10)
	digits := len(strings.TrimPrefix(s, "-"))
	return &literal{d: Datum{Kind: KindInt, I: i}, text: s, at: at, typ: intTypeWidth(KindInt, digits, len(s), false)}
}

func decLit(d dec, at int) *literal {
	datum := d.datum()
	text := datum.S
	return &literal{d: datum, text: text, at: at, typ: decimalType(d.digits(), d.scale, false)}
}

// negate folds a minus into a numeric literal (so that -9223372036854775808
// is BIGINT, as in MySQL), or builds the unary minus.
func negate(x node, at int) node {
	if l, ok := x.(*literal); ok {
		switch l.d.Kind {
		case KindInt:
			if l.d.I != -1<<63 {
				return intLit(-l.d.I, at)
			}
			return decLit(decFromInt(l.d.I).neg(), at)
		case KindUint:
			if l.d.U <= 1<<63 {
				return intLit(int64(-l.d.U), at)
			}
			return decLit(decFromUint(l.d.U).neg(), at)
		case KindDecimal:
			d, _ := parseDec(l.d.S)
			return decLit(d.neg(), at)
		}
	}
	return &neg{x: x, at: at}
}

// nullLit is NULL; alone it is typed as MySQL types it, BINARY(0).
func nullLit(at int) *literal {
	return &literal{d: Null, text: "NULL", at: at, typ: Type{Kind: KindNull, Column: "binary(0)", Nullable: true}}
}

// boolLit is TRUE or FALSE: 1 or 0 (MariaDB shows them 5 wide, as
// the word FALSE).
func boolLit(v bool, at int) *literal {
	l := intLit(0, at)
	l.text = "FALSE"
	if v {
		l = intLit(1, at)
		l.text = "TRUE"
	}
	l.typ = intTypeWidth(KindInt, 1, 5, false)
	return l
}
