package sinks

import (
	"strings"
	"testing"

	"github.com/readside/readside/projections"
)

func TestDrifts(t *testing.T) {
	id := Column{Name: "id", Type: "bigint(20) unsigned", Key: true}
	ver := Column{Name: "_rs_version", Type: "bigint unsigned", Comment: "readside: source version of this row"}
	verSink := Column{Name: "_rs_version", Type: "bigint(20) unsigned"}
	name := func(typ string, null bool) Column {
		return Column{Name: "name", Type: typ, Charset: "utf8mb4", Collation: "utf8mb4_general_ci", Nullable: null}
	}
	cases := []struct {
		why       string
		planned   []Column
		existing  []Column
		want      []string // Alter of each drift, in order
		safe      []bool
		harmless  []bool
		silent    []bool
		whyHasAll []string
	}{
		{why: "a table that matches has no drift (display widths and readside's own columns compared as the server writes them)",
			planned: []Column{id, name("varchar(16)", false), ver}, existing: []Column{id, name("varchar(16)", false), verSink}},
		{why: "an absent table is created by CREATE IF NOT EXISTS, not altered",
			planned: []Column{id, ver}},
		{why: "a source VARCHAR widened is a safe MODIFY",
			planned: []Column{id, name("varchar(200)", false), ver}, existing: []Column{id, name("varchar(16)", false), verSink},
			want: []string{"ALTER TABLE `t` MODIFY COLUMN `name` varchar(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"}, safe: []bool{true},
			whyHasAll: []string{"varchar(16) on the sink", "varchar(200) planned", "widening"}},
		{why: "a narrowing loses values: unsafe",
			planned: []Column{id, name("varchar(8)", false), ver}, existing: []Column{id, name("varchar(16)", false), verSink},
			want: []string{"ALTER TABLE `t` MODIFY COLUMN `name` varchar(8) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"}, safe: []bool{false},
			whyHasAll: []string{"narrower"}},
		{why: "INT to BIGINT is a widening",
			planned: []Column{id, {Name: "n", Type: "bigint(20)", Nullable: true}, ver}, existing: []Column{id, {Name: "n", Type: "int(11)", Nullable: true}, verSink},
			want: []string{"ALTER TABLE `t` MODIFY COLUMN `n` bigint(20) NULL"}, safe: []bool{true}},
		{why: "signed to unsigned of the same size loses the negatives",
			planned: []Column{id, {Name: "n", Type: "int(10) unsigned"}, ver}, existing: []Column{id, {Name: "n", Type: "int(11)"}, verSink},
			want: []string{"ALTER TABLE `t` MODIFY COLUMN `n` int(10) unsigned NOT NULL"}, safe: []bool{false}},
		{why: "an ENUM member appended keeps every stored member",
			planned: []Column{id, name("enum('a','b','c')", false), ver}, existing: []Column{id, name("enum('a','b')", false), verSink},
			want: []string{"ALTER TABLE `t` MODIFY COLUMN `name` enum('a','b','c') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"}, safe: []bool{true}},
		{why: "an ENUM member removed is lossy",
			planned: []Column{id, name("enum('a','c')", false), ver}, existing: []Column{id, name("enum('a','b','c')", false), verSink},
			want: []string{"ALTER TABLE `t` MODIFY COLUMN `name` enum('a','c') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"}, safe: []bool{false}},
		{why: "an ENUM member inserted between others keeps every stored value and their order",
			planned: []Column{id, name("enum('new','pending','active','it''s')", false), ver}, existing: []Column{id, name("enum('new','active','it''s')", false), verSink},
			want: []string{"ALTER TABLE `t` MODIFY COLUMN `name` enum('new','pending','active','it''s') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"}, safe: []bool{true}, silent: []bool{false}},
		{why: "a SET member inserted keeps every stored value",
			planned: []Column{id, name("set('x','w','y')", true), ver}, existing: []Column{id, name("set('x','y')", true), verSink},
			want: []string{"ALTER TABLE `t` MODIFY COLUMN `name` set('x','w','y') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL"}, safe: []bool{true}},
		{why: "ENUM members reordered change the order stored values sort in: unsafe",
			planned: []Column{id, name("enum('c','b','a')", false), ver}, existing: []Column{id, name("enum('a','b','c')", false), verSink},
			want: []string{"ALTER TABLE `t` MODIFY COLUMN `name` enum('c','b','a') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"}, safe: []bool{false}},
		{why: "an ENUM member respelled in another case is a drift (a _ci collation would rewrite stored values): unsafe",
			planned: []Column{id, name("enum('A','b')", false), ver}, existing: []Column{id, name("enum('a','b')", false), verSink},
			want: []string{"ALTER TABLE `t` MODIFY COLUMN `name` enum('A','b') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"}, safe: []bool{false}, silent: []bool{true}},
		{why: "an ENUM made a SET of the same members is another type: unsafe",
			planned: []Column{id, name("set('a','b')", false), ver}, existing: []Column{id, name("enum('a','b')", false), verSink},
			want: []string{"ALTER TABLE `t` MODIFY COLUMN `name` set('a','b') CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"}, safe: []bool{false}},
		{why: "TEXT to MEDIUMTEXT and VARCHAR to TEXT are widenings, DECIMAL with more integer and fraction digits too",
			planned:  []Column{id, name("mediumtext", true), {Name: "v", Type: "text", Charset: "utf8mb4", Collation: "utf8mb4_general_ci"}, {Name: "d", Type: "decimal(12,4)"}, ver},
			existing: []Column{id, name("text", true), {Name: "v", Type: "varchar(10)", Charset: "utf8mb4", Collation: "utf8mb4_general_ci"}, {Name: "d", Type: "decimal(10,2)"}, verSink},
			want: []string{
				"ALTER TABLE `t` MODIFY COLUMN `name` mediumtext CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL",
				"ALTER TABLE `t` MODIFY COLUMN `v` text CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL",
				"ALTER TABLE `t` MODIFY COLUMN `d` decimal(12,4) NOT NULL"}, safe: []bool{true, true, true}},
		{why: "a latin1 column moved to utf8mb4 keeps every character; the reverse does not",
			planned:  []Column{id, name("varchar(16)", false), {Name: "o", Type: "varchar(5)", Charset: "latin1", Collation: "latin1_swedish_ci"}, ver},
			existing: []Column{id, {Name: "name", Type: "varchar(16)", Charset: "latin1", Collation: "latin1_swedish_ci"}, {Name: "o", Type: "varchar(5)", Charset: "utf8mb4", Collation: "utf8mb4_general_ci"}, verSink},
			want: []string{
				"ALTER TABLE `t` MODIFY COLUMN `name` varchar(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL",
				"ALTER TABLE `t` MODIFY COLUMN `o` varchar(5) CHARACTER SET latin1 COLLATE latin1_swedish_ci NOT NULL"}, safe: []bool{true, false},
			whyHasAll: []string{"character set latin1 latin1_swedish_ci on the sink"}},
		{why: "a group column's collation changed: the groups already merged under the old one cannot be split: unsafe, and silent (the server refuses nothing)",
			planned:  []Column{{Name: "buyer", Type: "varchar(40)", Charset: "utf8mb4", Collation: "utf8mb4_bin", Key: true, Groups: true}, ver},
			existing: []Column{{Name: "buyer", Type: "varchar(40)", Charset: "utf8mb4", Collation: "utf8mb4_unicode_ci", Key: true}, verSink},
			want:     []string{"ALTER TABLE `t` MODIFY COLUMN `buyer` varchar(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"}, safe: []bool{false}, silent: []bool{true},
			whyHasAll: []string{"decides which values are one group or one distinct value", "cannot be split or joined in place"}},
		{why: "a group column moved from latin1 to utf8mb4 changes which values are one group too (latin1_swedish_ci: 'Y' = 'Ü')",
			planned:  []Column{{Name: "city", Type: "varchar(20)", Charset: "utf8mb4", Collation: "utf8mb4_general_ci", Key: true, Groups: true}, ver},
			existing: []Column{{Name: "city", Type: "varchar(20)", Charset: "latin1", Collation: "latin1_swedish_ci", Key: true}, verSink},
			want:     []string{"ALTER TABLE `t` MODIFY COLUMN `city` varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"}, safe: []bool{false}, silent: []bool{true}},
		{why: "a copy's key column with another collation is followed: each read row is one source row, none merged",
			planned:  []Column{{Name: "code", Type: "varchar(40)", Charset: "utf8mb4", Collation: "utf8mb4_bin", Key: true}, ver},
			existing: []Column{{Name: "code", Type: "varchar(40)", Charset: "utf8mb4", Collation: "utf8mb4_unicode_ci", Key: true}, verSink},
			want:     []string{"ALTER TABLE `t` MODIFY COLUMN `code` varchar(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"}, safe: []bool{true}, silent: []bool{false}},
		{why: "a source column made nullable needs the read column nullable too",
			planned: []Column{id, name("varchar(16)", true), ver}, existing: []Column{id, name("varchar(16)", false), verSink},
			want: []string{"ALTER TABLE `t` MODIFY COLUMN `name` varchar(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL"}, safe: []bool{true}},
		{why: "a nullable read column where NOT NULL is planned accepts every value: no drift",
			planned: []Column{id, name("varchar(16)", false), ver}, existing: []Column{id, name("varchar(16)", true), verSink}},
		{why: "a widening of a nullable read column keeps it nullable (it may hold NULLs)",
			planned: []Column{id, name("varchar(20)", false), ver}, existing: []Column{id, name("varchar(16)", true), verSink},
			want: []string{"ALTER TABLE `t` MODIFY COLUMN `name` varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL"}, safe: []bool{true}},
		{why: "a column removed from columns but NOT NULL without default breaks every insert: made nullable, the DROP only named",
			planned: []Column{id, ver}, existing: []Column{id, {Name: "conv`id", Type: "bigint(20)"}, verSink},
			want: []string{"ALTER TABLE `t` MODIFY COLUMN `conv``id` bigint(20) NULL"}, safe: []bool{true},
			whyHasAll: []string{"doesn't have a default value", "DROP COLUMN `conv``id`"}},
		{why: "a removed column that is nullable or defaulted is harmless: a warning with the DROP",
			planned: []Column{id, ver}, existing: []Column{id, name("varchar(16)", true), {Name: "n", Type: "int(11)", Default: "0", HasDefault: true}, verSink},
			want: []string{"ALTER TABLE `t` DROP COLUMN `name`", "ALTER TABLE `t` DROP COLUMN `n`"}, safe: []bool{false, false}, harmless: []bool{true, true}},
		{why: "a removed key column changes the primary key: unsafe",
			planned: []Column{ver}, existing: []Column{id, verSink},
			want: []string{"ALTER TABLE `t` DROP COLUMN `id`"}, safe: []bool{false}},
		{why: "a column added to columns is added nullable (rows already there have no value for it)",
			planned: []Column{id, name("varchar(16)", false), ver}, existing: []Column{id, verSink},
			want: []string{"ALTER TABLE `t` ADD COLUMN `name` varchar(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL"}, safe: []bool{true}},
		{why: "a join's version column keeps its default and comment when added",
			planned: []Column{id, {Name: "_rs_v_join1", Type: "bigint unsigned", Default: "0", HasDefault: true, Comment: "readside: it's"}, ver}, existing: []Column{id, verSink},
			want: []string{"ALTER TABLE `t` ADD COLUMN `_rs_v_join1` bigint unsigned NOT NULL DEFAULT 0 COMMENT 'readside: it''s'"}, safe: []bool{true}},
		{why: "readside's own column with another definition is drift too (signed INT to BIGINT UNSIGNED would lose negatives: unsafe)",
			planned: []Column{id, ver}, existing: []Column{id, {Name: "_rs_version", Type: "int(11)"}},
			want: []string{"ALTER TABLE `t` MODIFY COLUMN `_rs_version` bigint unsigned NOT NULL COMMENT 'readside: source version of this row'"}, safe: []bool{false}},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			got := Drifts("t", c.planned, c.existing)
			if len(got) != len(c.want) {
				t.Fatalf("%d drift(s), want %d: %+v", len(got), len(c.want), got)
			}
			for i, d := range got {
				if d.Alter != c.want[i] {
					t.Errorf("drift %d: alter\n  %s\nwant\n  %s", i, d.Alter, c.want[i])
				}
				if d.Safe != c.safe[i] {
					t.Errorf("drift %d (%s): safe %v, want %v", i, d.Why, d.Safe, c.safe[i])
				}
				if c.silent != nil && d.Silent != c.silent[i] {
					t.Errorf("drift %d (%s): silent %v, want %v", i, d.Why, d.Silent, c.silent[i])
				}
				if harmless := c.harmless != nil && c.harmless[i]; d.Harmless != harmless {
					t.Errorf("drift %d (%s): harmless %v, want %v", i, d.Why, d.Harmless, harmless)
				}
			}
			all := ""
			for _, d := range got {
				all += d.Why + "\n"
			}
			for _, w := range c.whyHasAll {
				if !strings.Contains(all, w) {
					t.Errorf("reasons lack %q:\n%s", w, all)
				}
			}
		})
	}
}

func TestParseDef(t *testing.T) {
	cases := []struct{ why, def, want string }{
		{"a charset-pinned NOT NULL column round-trips", "varchar(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL", "varchar(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"},
		{"a nullable column without charset round-trips", "bigint(20) unsigned NULL", "bigint(20) unsigned NULL"},
	}
	for _, c := range cases {
		if got := parseDef("c", c.def).Definition(); got != c.want {
			t.Errorf("%s: %q renders %q", c.why, c.def, got)
		}
	}
}

func TestStateTableDrifts(t *testing.T) {
	p := &projections.Projection{Name: "orders_c", Table: "orders_c", Key: []string{"id"},
		Columns: []projections.Column{{Name: "id", Source: "id"}, {Name: "cid", Source: "customer_id"}},
		Joins: []*projections.Join{{N: 1, ParentDB: "shop", ParentTbl: "customers",
			On:      []projections.JoinOn{{Parent: "id", Child: "customer_id", Read: "cid"}},
			Columns: []projections.Column{{Name: "cname", Source: "name"}}}}}
	types := func(name string) projections.Types {
		return projections.Types{
			Read:    map[string]string{"id": "bigint(20) NOT NULL", "cid": "int(11) NULL", "cname": name + " NULL"},
			JoinKey: []map[string]string{{"id": "int(11) NOT NULL"}},
		}
	}
	// The state table as the server reports what DDL created.
	sink := []Column{{Name: "k_id", Type: "int(11)", Key: true}, {Name: "c_cname", Type: "varchar(16)", Charset: "utf8mb4", Collation: "utf8mb4_general_ci", Nullable: true}, {Name: "_rs_version", Type: "bigint(20) unsigned"}}
	utf := " CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
	cases := []struct {
		why   string
		name  string // the parent column's planned type
		want  []string
		safes []bool
	}{
		{why: "a state table as DDL made it has no drift (its own _rs_version is planned, so not reported as undeclared)",
			name: "varchar(16)" + utf},
		{why: "a parent column widened at the source widens the copied column: a safe MODIFY of the state table",
			name: "varchar(200)" + utf, want: []string{"ALTER TABLE `_readside_join_orders_c_1` MODIFY COLUMN `c_cname` varchar(200)" + utf + " NULL"}, safes: []bool{true}},
		{why: "a parent column narrowed could lose copied values: unsafe, as for a read table",
			name: "varchar(8)" + utf, want: []string{"ALTER TABLE `_readside_join_orders_c_1` MODIFY COLUMN `c_cname` varchar(8)" + utf + " NULL"}, safes: []bool{false}},
	}
	for _, c := range cases {
		t.Run(c.why, func(t *testing.T) {
			tables := plannedTables(p, types(c.name))
			if len(tables) != 2 || tables[0].name != "orders_c" || tables[1].name != "_readside_join_orders_c_1" {
				t.Fatalf("planned tables %+v, want the read table and one state table", tables)
			}
			st := tables[1]
			got := Drifts(st.name, st.columns, sink)
			if len(got) != len(c.want) {
				t.Fatalf("%d drift(s), want %d: %+v", len(got), len(c.want), got)
			}
			for i, d := range got {
				if d.Alter != c.want[i] || d.Safe != c.safes[i] {
					t.Errorf("drift %d: alter %s safe %v, want %s safe %v", i, d.Alter, d.Safe, c.want[i], c.safes[i])
				}
				if r := st.read[d.Column]; r != "cname" {
					t.Errorf("drift %d: column %s is for read column %q, want cname", i, d.Column, r)
				}
			}
		})
	}
}

// TestPrecisionDrifts: a source change to more decimals, fractional
// seconds or a wider float is one the server stores rounded without an
// error, so the drift says so (Silent); those a read column can follow
// keeping every value are widenings.
func TestPrecisionDrifts(t *testing.T) {
	cases := []struct {
		sink, source   string
		widens, silent bool
	}{
		{"decimal(10,2)", "decimal(12,3)", true, true},
		{"decimal(10,2)", "decimal(10,3)", false, true},
		{"decimal(12,3)", "decimal(10,2)", false, false},
		{"decimal(10,2)", "decimal(11,2)", true, false},
		{"int", "decimal(10,2)", false, true},
		{"int", "decimal(12,2)", true, true},
		{"int", "decimal(10,0)", true, false},
		{"int unsigned", "decimal(10,0) unsigned", true, false},
		{"int", "decimal(10,0) unsigned", false, false},
		{"bigint", "decimal(20,0)", true, false},
		{"int", "double", false, true},
		{"float", "double", true, true},
		{"double", "float", false, false},
		{"float", "int", false, true},
		{"float", "smallint", false, false},
		{"double", "bigint", false, true},
		{"double", "int", false, false},
		{"decimal(10,2)", "float", false, true},
		{"datetime", "datetime(6)", true, true},
		{"datetime(6)", "datetime(3)", false, false},
		{"timestamp(3)", "timestamp(6)", true, true},
		{"time", "time(3)", true, true},
		{"datetime", "timestamp", false, false},
		{"date", "datetime", false, true},
		{"varchar(10)", "varchar(20)", true, false},
		{"varchar(10)", "text", true, false},
	}
	for _, c := range cases {
		if got := widens(c.sink, c.source); got != c.widens {
			t.Errorf("%s on the sink, %s at the source: widens %v, want %v", c.sink, c.source, got, c.widens)
		}
		if got := roundsSilently(c.sink, c.source); got != c.silent {
			t.Errorf("%s on the sink, %s at the source: rounds silently %v, want %v", c.sink, c.source, got, c.silent)
		}
	}
}
