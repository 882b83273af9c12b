package expr

import (
	"fmt"
	"strconv"
	"strings"
)

// TypeOfColumn is the type of a source column's values; with
// FromEventType it decodes a column's values without reading its
// definition again for each one.
func TypeOfColumn(c Column) (Type, error) { return typeOfDef(c.Def, c.Nullable) }

// typeOfDef types a source column from its information_schema definition
// ("int(11) unsigned", "decimal(12,2)", "varchar(64) CHARACTER SET
// utf8mb4 COLLATE utf8mb4_general_ci").
func typeOfDef(def string, nullable bool) (Type, error) {
	d := strings.ToLower(strings.TrimSpace(def))
	t := Type{Column: def, Nullable: nullable}
	base, rest, _ := strings.Cut(d, " ")
	name, args, _ := strings.Cut(base, "(")
	args = strings.TrimSuffix(args, ")")
	n, s := -1, -1
	if args != "" {
		a, b, two := strings.Cut(args, ",")
		n, _ = strconv.Atoi(a)
		if two {
			s, _ = strconv.Atoi(b)
		}
	}
	unsigned := strings.Contains(rest, "unsigned")
	switch name {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		t.Kind, t.prec = KindInt, intDigits(name)
		if unsigned {
			t.Kind = KindUint
			if name == "mediumint" || name == "bigint" {
				t.prec++
			}
		}
	case "year":
		t.Kind, t.prec = KindUint, 4
	case "bit":
		t.Kind, t.prec = KindUint, max(n, 1) // MariaDB counts a BIT's bits as its digits
	case "decimal", "numeric", "dec", "fixed":
		if n < 0 {
			n = 10
		}
		if s < 0 {
			s = 0
		}
		t.Kind, t.prec, t.Frac = KindDecimal, n, uint8(s)
	case "float", "double", "real":
		t.Kind = KindDouble
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set":
		t.Kind = KindString
		t.Coll = collationOfDef(d)
		if t.Coll == "" {
			return t, fmt.Errorf("column definition %q has no COLLATE: give character columns as information_schema does, with CHARACTER SET and COLLATE", def)
		}
		t.prec = textLen(name, n)
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "geometry", "point", "linestring", "polygon":
		t.Kind = KindBytes
		t.prec = textLen(name, n)
	case "json":
		t.Kind, t.Coll, t.prec = KindJSON, "utf8mb4_bin", 1<<32-1
	case "date":
		t.Kind = KindDate
	case "datetime", "timestamp":
		t.Kind = KindDatetime
		if n > 0 {
			t.Frac = uint8(n)
		}
	case "time":
		t.Kind = KindTime
		if n > 0 {
			t.Frac = uint8(n)
		}
	default:
		return t, fmt.Errorf("column type %q is not offered in expressions", def)
	}
	return t, nil
}

// intDigits is how many digits a signed integer type holds.
func intDigits(name string) int {
	switch name {
	case "tinyint":
		return 3
	case "smallint":
		return 5
	case "mediumint":
		return 7
	case "bigint":
		return 19
	}
	return 10
}

func textLen(name string, n int) int {
	switch name {
	case "tinytext", "tinyblob":
		return 255
	case "text", "blob":
		return 65535
	case "mediumtext", "mediumblob":
		return 1<<24 - 1
	case "longtext", "longblob", "geometry", "point", "linestring", "polygon":
		return 1<<32 - 1
	case "enum", "set":
		return 255
	}
	if n < 0 {
		return 1
	}
	return n
}

func collationOfDef(d string) string {
	i := strings.Index(d, " collate ")
	if i < 0 {
		return ""
	}
	c, _, _ := strings.Cut(strings.TrimSpace(d[i+len(" collate "):]), " ")
	return c
}

func charsetOf(coll string) string {
	cs, _, _ := strings.Cut(coll, "_")
	if cs == "utf8" {
		return "utf8mb3"
	}
	return cs
}

// Result types of computed values, as CREATE TABLE … AS SELECT gives them.

// intType is an integer result of that many digits; a signed one is
// shown one character wider, for the sign.
func intType(k Kind, digits int, nullable bool) Type {
	width := digits
	if k == KindInt {
		width++
	}
	return intTypeWidth(k, digits, width, nullable)
}

// intTypeWidth is an integer result of that many digits shown in width
// characters (the display width MySQL gives it).
func intTypeWidth(k Kind, digits, width int, nullable bool) Type {
	return Type{Kind: k, Nullable: nullable, prec: digits, Column: intColumn(k, width)}
}

// intColumn is the server's column for an integer result shown in width
// characters: int up to 9 (MariaDB's type_handler_long_or_longlong),
// bigint beyond.
func intColumn(k Kind, width int) string {
	name := "bigint"
	if width <= 9 {
		name = "int"
	}
	s := fmt.Sprintf("%s(%d)", name, width)
	if k == KindUint {
		s += " unsigned"
	}
	return s
}

const (
	maxDecimalPrec  = 65
	maxDecimalScale = 38 // MariaDB; MySQL 8 caps a scale at 30
)

func decimalType(prec, scale int, nullable bool) Type {
	if scale > maxDecimalScale {
		scale = maxDecimalScale
	}
	if prec > maxDecimalPrec {
		prec = maxDecimalPrec
	}
	if prec < scale {
		prec = scale
	}
	if prec == 0 {
		prec = 1
	}
	return Type{Kind: KindDecimal, Column: fmt.Sprintf("decimal(%d,%d)", prec, scale), Nullable: nullable, prec: prec, Frac: uint8(scale)}
}

func doubleType(nullable bool) Type {
	return Type{Kind: KindDouble, Column: "double", Nullable: nullable}
}

// stringType is a character string of at most n characters.
func stringType(n int, coll string, nullable bool) Type {
	t := Type{Kind: KindString, Coll: coll, Nullable: nullable, prec: n}
	cs := " CHARACTER SET " + charsetOf(coll) + " COLLATE " + coll
	switch {
	case n == 0:
		t.Column = "char(0)" + cs
	case n <= 16383:
		t.Column = fmt.Sprintf("varchar(%d)", n) + cs
	case n <= 1<<24-1:
		t.Column = "mediumtext" + cs
	default:
		t.Column = "longtext" + cs
	}
	return t
}

func bytesType(n int, nullable bool) Type {
	t := Type{Kind: KindBytes, Nullable: nullable, prec: n}
	switch {
	case n == 0:
		t.Column = "binary(0)" // what only NULL (or '') has
	case n <= 65532:
		t.Column = fmt.Sprintf("varbinary(%d)", n)
	case n <= 1<<24-1:
		t.Column = "mediumblob"
	default:
		t.Column = "longblob"
	}
	return t
}

func temporalType(k Kind, frac int, nullable bool) Type {
	t := Type{Kind: k, Frac: uint8(frac), Nullable: nullable}
	switch k {
	case KindDate:
		t.Column = "date"
	case KindDatetime:
		t.Column = "datetime"
	case KindTime:
		t.Column = "time"
	}
	if frac > 0 && k != KindDate {
		t.Column += fmt.Sprintf("(%d)", frac)
	}
	return t
}

// boolType is the type of a comparison or logical operator: 1, 0 or NULL.
func boolType(nullable bool) Type { return intTypeWidth(KindInt, 1, 1, nullable) }

// digits is how many decimal digits the integer part of a numeric type
// holds (MySQL's decimal_int_part), for result precisions.
func (t Type) intDigits() int {
	switch t.Kind {
	case KindInt, KindUint:
		return t.prec
	case KindDecimal:
		return t.prec - int(t.Frac)
	case KindNull:
		return 1
	}
	return 0
}
