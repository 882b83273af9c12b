package keyset

import (
	"reflect"
	"testing"
)

func TestCompare(t *testing.T) {
	for _, c := range []struct {
		why  string
		got  func() (string, []any)
		want string
		args []any
	}{
		{"one column: a plain comparison", func() (string, []any) { return After([]string{"`id`"}, []any{5}) },
			"((`id` > ?))", []any{5}},
		{"two columns: the tuple comparison spelled out, each leading value bound again for its equality",
			func() (string, []any) { return After([]string{"a", "b"}, []any{1, "x"}) },
			"((a > ?) OR (a = ? AND b > ?))", []any{1, 1, "x"}},
		{"three columns", func() (string, []any) { return After([]string{"a", "b", "c"}, []any{1, 2, 3}) },
			"((a > ?) OR (a = ? AND b > ?) OR (a = ? AND b = ? AND c > ?))", []any{1, 1, 2, 1, 2, 3}},
		{"the upper end of a chunk includes its key: only the last column's comparison is <=",
			func() (string, []any) { return AtMost([]string{"a", "b"}, []any{1, "x"}) },
			"((a < ?) OR (a = ? AND b <= ?))", []any{1, 1, "x"}},
		{"values are placed as bound: bytes stay bytes, compared byte for byte",
			func() (string, []any) { return After([]string{"k"}, []any{[]byte{0, 0xff}}) },
			"((k > ?))", []any{[]byte{0, 0xff}}},
	} {
		got, args := c.got()
		if got != c.want || !reflect.DeepEqual(args, c.args) {
			t.Errorf("%s:\n got %s %#v\nwant %s %#v", c.why, got, args, c.want, c.args)
		}
	}
}

func TestPageSQL(t *testing.T) {
	p := Page{Select: "*", From: "`t`", Key: []string{"`a`", "`b`"}, Limit: 100}
	filtered := p
	filtered.Where, filtered.Args = []string{"x = ?", "y OR z"}, []any{"v"}
	boundary := p
	boundary.Limit, boundary.Offset = 1, 99
	integer := p
	integer.IntegerKey = true
	integerFiltered := filtered
	integerFiltered.IntegerKey = true
	for _, c := range []struct {
		why   string
		p     Page
		after []any
		want  string
		args  []any
	}{
		{"the first page: no condition", p, nil, "SELECT * FROM `t` ORDER BY `a`, `b` LIMIT 100", nil},
		{"a later page: after the last key read", p, []any{1, 2},
			"SELECT * FROM `t` WHERE ((`a` > ?) OR (`a` = ? AND `b` > ?)) ORDER BY `a`, `b` LIMIT 100", []any{1, 1, 2}},
		{"further conditions come first, each parenthesized so an OR stays inside it, their args first", filtered, []any{1, 2},
			"SELECT * FROM `t` WHERE (x = ?) AND (y OR z) AND ((`a` > ?) OR (`a` = ? AND `b` > ?)) ORDER BY `a`, `b` LIMIT 100",
			[]any{"v", 1, 1, 2}},
		{"a boundary: one row at an offset", boundary, nil, "SELECT * FROM `t` ORDER BY `a`, `b` LIMIT 1 OFFSET 99", nil},
		{"an integer key's integers, as read in the text protocol, are written into the statement: no parameters, no prepare",
			integer, []any{[]byte("-7"), []byte("18446744073709551615")},
			"SELECT * FROM `t` WHERE ((`a` > -7) OR (`a` = -7 AND `b` > 18446744073709551615)) ORDER BY `a`, `b` LIMIT 100", nil},
		{"Go integers are written too", integer, []any{int64(1), uint64(2)},
			"SELECT * FROM `t` WHERE ((`a` > 1) OR (`a` = 1 AND `b` > 2)) ORDER BY `a`, `b` LIMIT 100", nil},
		{"a value that is no integer (a damaged checkpoint) is never written into SQL: the whole key is bound",
			integer, []any{[]byte("1"), []byte("2; DROP TABLE t")},
			"SELECT * FROM `t` WHERE ((`a` > ?) OR (`a` = ? AND `b` > ?)) ORDER BY `a`, `b` LIMIT 100",
			[]any{[]byte("1"), []byte("1"), []byte("2; DROP TABLE t")}},
		{"an empty value is no integer either", integer, []any{[]byte(""), []byte("2")},
			"SELECT * FROM `t` WHERE ((`a` > ?) OR (`a` = ? AND `b` > ?)) ORDER BY `a`, `b` LIMIT 100",
			[]any{[]byte(""), []byte(""), []byte("2")}},
		{"further conditions keep their parameters", integerFiltered, []any{[]byte("1"), []byte("2")},
			"SELECT * FROM `t` WHERE (x = ?) AND (y OR z) AND ((`a` > 1) OR (`a` = 1 AND `b` > 2)) ORDER BY `a`, `b` LIMIT 100",
			[]any{"v"}},
	} {
		got, args := c.p.SQL(c.after)
		if got != c.want || !reflect.DeepEqual(args, c.args) {
			t.Errorf("%s:\n got %s %#v\nwant %s %#v", c.why, got, args, c.want, c.args)
		}
	}
	// SQL must not write into the caller's Args: a Page is reused for
	// every page of a walk.
	args := make([]any, 1, 4)
	args[0] = "v"
	q := Page{Select: "*", From: "t", Key: []string{"a"}, Where: []string{"x = ?"}, Args: args, Limit: 1}
	_, a1 := q.SQL([]any{1})
	_, a2 := q.SQL([]any{2})
	if a1[1] != 1 || a2[1] != 2 {
		t.Errorf("pages share their args: %v %v", a1, a2)
	}
}
