package projections

import (
	"strings"
	"testing"
)

// TestKeyPartBytes: each width is what MariaDB 10.11 counts against the
// 3072-byte limit, as measured by CREATE TABLE at the boundary (e.g.
// VARBINARY(3064) + DATETIME(6) is accepted, VARBINARY(3065) + it refused).
func TestKeyPartBytes(t *testing.T) {
	for _, c := range []struct {
		why, def string
		want     int
		ok       bool
	}{
		{"utf8mb4 text: 4 bytes a character, no length prefix", "varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL", 1020, true},
		{"utf8mb3 text: 3 bytes a character", "varchar(1024) CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci", 3072, true},
		{"the old name of utf8mb3", "char(10) CHARACTER SET utf8 COLLATE utf8_general_ci", 30, true},
		{"latin1: a byte a character", "varchar(1024) CHARACTER SET latin1 COLLATE latin1_swedish_ci", 1024, true},
		{"a charset not named: utf8mb4's width, the widest usual one", "varchar(10)", 40, true},
		{"bytes are bytes", "varbinary(3072)", 3072, true},
		{"binary(n)", "binary(16)", 16, true},
		{"int display width does not matter", "int(11) unsigned NOT NULL", 4, true},
		{"bigint", "bigint(20)", 8, true},
		{"tinyint", "tinyint(1)", 1, true},
		{"date", "date", 3, true},
		{"datetime(6): 5 + 3 fraction bytes", "datetime(6)", 8, true},
		{"datetime(3): 5 + 2", "datetime(3)", 7, true},
		{"plain datetime", "datetime", 5, true},
		{"timestamp(6): 4 + 3", "timestamp(6)", 7, true},
		{"time(6): 3 + 3", "time(6)", 6, true},
		{"decimal(20,2): 18 digits in 8 bytes, 2 in 1", "decimal(20,2)", 9, true},
		{"decimal(12,2): 10 digits in 5 bytes, 2 in 1", "decimal(12,2) NULL", 6, true},
		{"double", "double", 8, true},
		{"bit(8)", "bit(8)", 1, true},
		{"year", "year(4)", 1, true},
		{"enum of few members", "enum('a','b(c)') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", 1, true},
		{"TEXT is not sized (refused as a key elsewhere)", "text CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", 0, false},
		{"nor JSON", "longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", 0, false},
	} {
		got, ok := KeyPartBytes(c.def)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: KeyPartBytes(%q) = %d, %v; want %d, %v", c.why, c.def, got, ok, c.want, c.ok)
		}
	}
}

// TestCheckAggregateKeys: keys wider than an InnoDB index holds are
// refused in check (before any DDL) with the projection, the aggregate,
// the width, the limit and the fix; keys that fit, to the byte, pass.
func TestCheckAggregateKeys(t *testing.T) {
	wide := "varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
	src := cookbookTable([][3]string{{"id", "bigint(20)"}, {"a", wide}, {"b", wide}, {"c", wide}, {"d", wide},
		{"short", "varchar(3) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"name", "varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"},
		{"l1", "varchar(12) CHARACTER SET latin1 COLLATE latin1_swedish_ci"},
		{"total", "decimal(12,2)"}})
	for _, c := range []struct {
		why     string
		groupBy []string
		agg     string
		want    []string // substrings of the one error; none: no error
	}{
		{"three wide group columns and a 100-character value: the distinct table's key is 3460 bytes", []string{"a", "b", "c"}, "count(distinct name)",
			[]string{`projections.stats.aggregates.x "count(distinct name)": its distinct values table _readside_dst_stats_x's primary key (the group columns and the value) is up to 3460 bytes (a 1020 + b 1020 + c 1020 + value 400), over the 3072 bytes an InnoDB index holds: group by narrower columns`,
				"or a shorter value, e.g. count(distinct CAST(x AS CHAR(3)))"}},
		{"the same group with a 3-character value fits to the byte (3060 + 12)", []string{"a", "b", "c"}, "count(distinct short)", nil},
		{"a latin1 value counts a byte a character (3060 + 12)", []string{"a", "b", "c"}, "count(distinct l1)", nil},
		{"sum(distinct) of a decimal: 3060 + 6 fits", []string{"a", "b", "c"}, "sum(distinct total)", nil},
		{"max keeps an index of (group, value) in the contributions table", []string{"a", "b", "c"}, "max(name)",
			[]string{`aggregates.x "max(name)": the contributions table _readside_agg_stats's index of its values (the group columns and the value) is up to 3460 bytes`, "e.g. max(CAST(x AS CHAR(3)))"}},
		{"count keeps no keyed value", []string{"a", "b", "c"}, "count(name)", nil},
		{"four wide group columns: the read table's own key is too wide, named once", []string{"a", "b", "c", "d"}, "count(distinct name)",
			[]string{"projections.stats.group_by: the read table stats's primary key (its group columns) is up to 4080 bytes (a 1020 + b 1020 + c 1020 + d 1020), over the 3072 bytes an InnoDB index holds: group by narrower columns"}},
	} {
		cfg := aggConfig()
		d := cfg.Projections["stats"]
		d.GroupBy, d.Aggregates = c.groupBy, map[string]string{"x": c.agg}
		cfg.Projections["stats"] = d
		ps, err := Compile(cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.why, err)
		}
		errs := ps[0].checkOwnTable(src, &Types{Read: map[string]string{}})
		if len(c.want) == 0 {
			if len(errs) > 0 {
				t.Errorf("%s: refused: %v", c.why, errs)
			}
			continue
		}
		if len(errs) != 1 {
			t.Errorf("%s: %d errors, want 1: %v", c.why, len(errs), errs)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(errs[0].Error(), w) {
				t.Errorf("%s: error\n%v\nlacks %q", c.why, errs[0], w)
			}
		}
	}
}
