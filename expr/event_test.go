package expr

import (
	"strings"
	"testing"
)

// TestFromEvent: each value form of docs/events.md "Values" becomes the
// Datum expressions compute with.
func TestFromEvent(t *testing.T) {
	cases := []struct{ raw, def, want, why string }{
		{`null`, "int(11)", "NULL", "JSON null is SQL NULL"},
		{`-2147483648`, "int(11)", "-2147483648", "a signed integer"},
		{`18446744073709551615`, "bigint(20) unsigned", "18446744073709551615", "beyond int64, exact"},
		{`"18446744073709551615"`, "bigint(20) unsigned", "18446744073709551615", "Debezium's precise BIGINT UNSIGNED, read as a DECIMAL's text"},
		{`0`, "year(4)", "0000", "a YEAR shows four digits as text"},
		{`18446744073709551615`, "bit(64)", "18446744073709551615", "BIT as an unsigned number"},
		{`"-0.50"`, "decimal(5,2)", "-0.50", "DECIMAL keeps its scale"},
		{`-0.5`, "decimal(5,2)", "-0.50", "Debezium's decimal.handling.mode double: a DECIMAL as a double, at the column's scale"},
		{`1.0E-5`, "decimal(10,6)", "0.000010", "a double in Java's exponent form"},
		{`0.1`, "float", "0.10000000149011612", "FLOAT widens to the double MySQL computes with"},
		{`1.7976931348623157e+308`, "double", "1.7976931348623157e308", "DOUBLE's extreme (as text inside an expression)"},
		{`"0000-00-00"`, "date", "0000-00-00", "a zero date as written"},
		{`"2038-01-19 03:14:07.999999"`, "timestamp(6)", "2038-01-19 03:14:07.999999", "TIMESTAMP in UTC"},
		{`"-838:59:59.00"`, "time(2)", "-838:59:59.00", "negative TIME"},
		{`"\u00e9\ud83d\ude00 "`, "varchar(4) CHARACTER SET latin1 COLLATE latin1_swedish_ci", "é😀 ", "escaped JSON text"},
		{`"x,z"`, "set('x','y','z') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "x,z", "SET members"},
		{`"YWIAAA=="`, "binary(4)", "ab\x00\x00", "base64 bytes with BINARY's padding"},
		{`"AAAAAAEBAAAAAAAAAAAA8D8AAAAAAAAAQA=="`, "point", "\x00\x00\x00\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\x00@", "GEOMETRY as its bytes"},
		{`"{\"a\": 1}"`, "json", `{"a": 1}`, "a JSON document's text"},
	}
	for _, c := range cases {
		d, err := FromEvent([]byte(c.raw), c.def)
		if err != nil {
			t.Errorf("%s %s (%s): %v", c.raw, c.def, c.why, err)
			continue
		}
		if got := render(d); got != c.want {
			t.Errorf("%s %s (%s): got %q, want %q", c.raw, c.def, c.why, got, c.want)
		}
	}
	if _, err := FromEvent([]byte(`-1`), "bigint(20) unsigned"); err == nil || !strings.Contains(err.Error(), "bigint.unsigned.handling.mode=precise") {
		t.Errorf("a negative BIGINT UNSIGNED (Debezium's long mode wrapped it): %v, want the mode named", err)
	}
	for _, bad := range []struct{ raw, def string }{{`"1"`, "int(11)"}, {`"-1"`, "int(10) unsigned"}, {`1.5.1`, "decimal(5,2)"}, {`"!"`, "blob"}, {`1`, "inet6"}} {
		if _, err := FromEvent([]byte(bad.raw), bad.def); err == nil {
			t.Errorf("%s as %s: no error", bad.raw, bad.def)
		}
	}
}

// TestBind: the text bound for a read column stores the value itself.
func TestBind(t *testing.T) {
	cases := []struct {
		d      Datum
		want   string
		binary bool
	}{
		{Datum{Kind: KindInt, I: -5}, "-5", false},
		{Datum{Kind: KindUint, U: 18446744073709551615}, "18446744073709551615", false},
		{Datum{Kind: KindDecimal, S: "0.3333", Frac: 4}, "0.3333", false},
		{Datum{Kind: KindDouble, F: 0.1}, "0.1", false},
		{Datum{Kind: KindBytes, S: "a\x00"}, "a\x00", true},
		{Datum{Kind: KindDatetime, S: "2024-02-29 23:59:59.5", Frac: 1}, "2024-02-29 23:59:59.5", false},
	}
	for _, c := range cases {
		text, binary, ok := Bind(c.d, Type{Kind: c.d.Kind})
		if !ok || string(text) != c.want || binary != c.binary {
			t.Errorf("Bind(%+v) = %q, %v, %v; want %q, %v", c.d, text, binary, ok, c.want, c.binary)
		}
	}
	if _, _, ok := Bind(Null, Type{Kind: KindInt}); ok {
		t.Error("NULL binds as SQL NULL (ok false)")
	}
}
