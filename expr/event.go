package expr

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// FromEvent converts one column's value as an event carries it (JSON, see
// docs/events.md "Values") to a Datum, by the column's source definition
// (Column.Def).
func FromEvent(raw []byte, def string) (Datum, error) {
	if len(raw) == 4 && string(raw) == "null" {
		return Null, nil
	}
	t, err := typeOfDef(def, true)
	if err != nil {
		return Null, err
	}
	return FromEventType(raw, t)
}

// FromEventType is FromEvent for a column whose type TypeOfColumn gave.
func FromEventType(raw []byte, t Type) (Datum, error) {
	if len(raw) == 4 && string(raw) == "null" {
		return Null, nil
	}
	switch t.Kind {
	case KindInt:
		i, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return Null, fmt.Errorf("value %s of a %s column: %w", raw, t.Column, err)
		}
		return Datum{Kind: KindInt, I: i}, nil
	case KindUint:
		u, err := strconv.ParseUint(unsignedText(raw), 10, 64)
		if err != nil && len(raw) > 0 && raw[0] == '-' {
			return Null, fmt.Errorf("value %s of a %s column: a negative number, as Debezium's bigint.unsigned.handling.mode long writes a BIGINT UNSIGNED of 2^63 and above; "+
				"fix: bigint.unsigned.handling.mode=precise on the connector (and input.debezium.bigint.unsigned.handling.mode: precise without the schema block)", raw, t.Column)
		}
		if err != nil {
			return Null, fmt.Errorf("value %s of a %s column: %w", raw, t.Column, err)
		}
		if strings.HasPrefix(strings.ToLower(t.Column), "year") {
			// a YEAR is a number, but as a string always four digits
			return Datum{Kind: KindUint, U: u, S: fmt.Sprintf("%04d", u)}, nil
		}
		return Datum{Kind: KindUint, U: u}, nil
	case KindDouble:
		bits := 64
		if strings.HasPrefix(strings.ToLower(t.Column), "float") {
			bits = 32 // a FLOAT's shortest float32 text, widened as MySQL widens it
		}
		f, err := strconv.ParseFloat(string(raw), bits)
		if err != nil {
			return Null, fmt.Errorf("value %s of a %s column: %w", raw, t.Column, err)
		}
		return Datum{Kind: KindDouble, F: f}, nil
	}
	if t.Kind == KindDecimal && len(raw) > 0 && raw[0] != '"' {
		// Debezium's decimal.handling.mode double writes a DECIMAL as a
		// double (its precision lost there): at the column's scale, as
		// the source has it when the double still holds its digits.
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return Null, fmt.Errorf("value %s of a %s column: %w", raw, t.Column, err)
		}
		return Datum{Kind: KindDecimal, S: strconv.FormatFloat(f, 'f', int(t.Frac), 64), Frac: t.Frac}, nil
	}
	s, err := jsonString(raw)
	if err != nil {
		return Null, fmt.Errorf("value %.40s of a %s column: %w", raw, t.Column, err)
	}
	switch t.Kind {
	case KindDecimal:
		if _, ok := parseDec(s); !ok {
			return Null, fmt.Errorf("value %q of a %s column is not a decimal", s, t.Column)
		}
		return Datum{Kind: KindDecimal, S: s, Frac: t.Frac}, nil
	case KindString:
		return Datum{Kind: KindString, S: s, Coll: t.Coll}, nil
	case KindBytes:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return Null, fmt.Errorf("value of a %s column is not base64: %w", t.Column, err)
		}
		return Datum{Kind: KindBytes, S: string(b)}, nil
	case KindJSON:
		return Datum{Kind: KindJSON, S: s}, nil
	}
	return Datum{Kind: t.Kind, S: s, Frac: t.Frac}, nil // DATE, DATETIME, TIMESTAMP, TIME
}

// unsignedText is an unsigned column's value as digits: a JSON number, or
// the JSON string of one — Debezium's bigint.unsigned.handling.mode
// precise writes a BIGINT UNSIGNED as a Decimal of scale 0, which the
// Debezium decoders read as a DECIMAL's text ("18446744073709551615"):
// its schema cannot tell it from a DECIMAL(20,0)'s.
func unsignedText(raw []byte) string {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		return string(raw[1 : len(raw)-1])
	}
	return string(raw)
}

// jsonString decodes a JSON string, without a copy's detour through
// encoding/json when it has no escapes.
func jsonString(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", fmt.Errorf("want a JSON string")
	}
	inner := raw[1 : len(raw)-1]
	plain := true
	for _, c := range inner {
		if c == '\\' || c == '"' || c < 0x20 {
			plain = false
			break
		}
	}
	if plain {
		return string(inner), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// Bind is d as the text to bind for a read column of type t: what MySQL
// stores from the expression's value (numbers as exact digits, temporal
// values in their canonical text, binary strings as bytes). ok is false
// for NULL.
func Bind(d Datum, t Type) (text []byte, binary bool, ok bool) {
	if d.IsNull() {
		return nil, false, false
	}
	switch d.Kind {
	case KindInt:
		return strconv.AppendInt(nil, d.I, 10), false, true
	case KindUint:
		return strconv.AppendUint(nil, d.U, 10), false, true
	case KindDouble:
		// the shortest text that reads back as the same double
		return strconv.AppendFloat(nil, d.F, 'g', -1, 64), false, true
	}
	return []byte(d.S), d.Kind == KindBytes || t.Kind == KindBytes, true
}
