package expr

import (
	"strings"
	"testing"
)

func TestNumberFunctionTypes(t *testing.T) {
	for _, c := range []struct {
		why, fn, def, want string
	}{
		{"an integer keeps its type", "FLOOR", "tinyint(4)", "tinyint(4)"},
		{"YEAR becomes INT UNSIGNED", "CEIL", "year(4)", "int(4) unsigned"},
		{"a signed decimal may gain a digit below zero", "FLOOR", "decimal(10,2)", "int(10)"},
		{"nine digits and the carry need a BIGINT", "FLOOR", "decimal(11,2)", "bigint(11)"},
		{"past 18 digits it stays a DECIMAL", "FLOOR", "decimal(20,2)", "decimal(19,0)"},
		{"an unsigned FLOOR cannot gain a digit", "FLOOR", "decimal(10,1) unsigned", "int(9) unsigned"},
		{"an unsigned CEIL can", "CEIL", "decimal(10,1) unsigned", "bigint(10) unsigned"},
		{"all fraction: one digit", "FLOOR", "decimal(3,3)", "int(2)"},
		{"the server's DOUBLE(17,0) cuts values: a plain DOUBLE", "CEILING", "double", "double"},
		{"ABS of an INT may not fit an INT", "ABS", "int(11)", "bigint(11)"},
		{"ABS of a MEDIUMINT fits", "ABS", "mediumint(9)", "int(9)"},
		{"ABS keeps a decimal", "ABS", "decimal(5,2) unsigned", "decimal(5,2) unsigned"},
		{"ABS of a double", "ABS", "double", "double"},
		{"strings would go through a DOUBLE", "ABS", "varchar(3) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", "ABS takes a number, not a string"},
		{"a BIT is refused", "FLOOR", "bit(5)", "FLOOR of a BIT value"},
		{"temporal values are refused", "FLOOR", "datetime", "FLOOR takes a number, not a datetime"},
	} {
		f, _ := lookup(c.fn)
		got, err := f.Type([]Type{colType(t, c.def)}, []*Datum{nil})
		text := got.Column
		if err != nil {
			text = err.Error()
		}
		if !strings.HasPrefix(text, c.want) {
			t.Errorf("%s: %s(%s) = %s, want %s", c.why, c.fn, c.def, text, c.want)
		}
	}
}

func TestNumberFunctionEval(t *testing.T) {
	dec := func(s string) Datum { return Datum{Kind: KindDecimal, S: s} }
	for _, c := range []struct {
		why, fn, def string
		arg          Datum
		want         string
	}{
		{"FLOOR goes down below zero", "FLOOR", "decimal(10,2)", dec("-1.50"), "-2"},
		{"and cuts above", "FLOOR", "decimal(10,2)", dec("1.50"), "1"},
		{"CEIL of a small negative is 0, not -0", "CEIL", "decimal(10,2)", dec("-0.50"), "0"},
		{"a carry adds a digit", "CEIL", "decimal(10,2)", dec("99999999.01"), "100000000"},
		{"past BIGINT stays decimal text", "FLOOR", "decimal(65,30)", dec("-99999999999999999999999999999999999.000000000000000000000000000001"), "-100000000000000000000000000000000000"},
		{"a whole decimal is itself", "FLOOR", "decimal(10,2)", dec("-3.00"), "-3"},
		{"CEIL of a negative double to 0, not -0", "CEIL", "double", Datum{Kind: KindDouble, F: -0.5}, "0"},
		{"ABS drops the sign of a decimal", "ABS", "decimal(10,2)", dec("-0.50"), "0.50"},
		{"ABS of an integer", "ABS", "int(11)", Datum{Kind: KindInt, I: -2147483648}, "2147483648"},
		{"ABS of a YEAR is its number", "ABS", "year(4)", Datum{Kind: KindUint, U: 0, S: "0000"}, "0"},
	} {
		f, _ := lookup(c.fn)
		typ := colType(t, c.def)
		got, err := f.Eval([]Datum{c.arg}, []Type{typ})
		if err != nil {
			t.Errorf("%s: %v", c.why, err)
			continue
		}
		if got.Text() != c.want {
			t.Errorf("%s: %s(%s) = %s, want %s", c.why, c.fn, c.arg.Text(), got.Text(), c.want)
		}
	}
	f, _ := lookup("ABS")
	if _, err := f.Eval([]Datum{{Kind: KindInt, I: -1 << 63}}, []Type{colType(t, "bigint(20)")}); err == nil || !strings.Contains(err.Error(), "BIGINT value is out of range") {
		t.Errorf("ABS(-2^63) = %v, want MySQL's out of range error", err)
	}
}
