package projections_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// aggTypes aggregates every numeric width, decimals, dates, date-times,
// a case-insensitive string and expressions: each read column's type
// must be the one MariaDB's CREATE TABLE … AS SELECT gives the aggregate.
var aggTypes = map[string]string{
	"n":       "count(*)",
	"n_s":     "count(s)",
	"n_if":    "count_if(i > 0)",
	"s_ti":    "sum(ti)",
	"s_tu":    "sum(tu)",
	"s_si":    "sum(si)",
	"s_mi":    "sum(mi)",
	"s_mu":    "sum(mu)",
	"s_i":     "sum(i)",
	"s_iu":    "sum(iu)",
	"s_b":     "sum(b)",
	"s_bu":    "sum(bu)",
	"s_d":     "sum(d)",
	"s_d2":    "sum(d2)",
	"s_expr":  "sum(i / 100)",
	"s_if":    "sum_if(s = 'x', d)",
	"a_i":     "avg(i)",
	"a_d":     "avg(d)",
	"a_bu":    "avg(bu)",
	"a_d2":    "avg(d2)",
	"a_ti":    "avg(ti)",
	"min_i":   "min(i)",
	"max_s":   "max(s)",
	"min_s":   "min(s)",
	"min_dt":  "min(dt)",
	"max_dtm": "max(dtm)",
	"max_bin": "max(vb)",
	"min_d":   "min(d)",
	"max_day": "max(DATE(dtm))",
	"u_s":     "count(distinct s)",
	"u_vb":    "count(distinct vb)",
	"u_d":     "count(distinct d)",
	"u_d2":    "count(distinct d2)",
	"u_dtm":   "count(distinct dtm)",
	"u_bu":    "count(distinct bu)",
	"sd_d":    "sum(distinct d)",
	"sd_i":    "sum(distinct i)",
	"sd_bu":   "sum(distinct bu)",
}

// TestAggregateTypes: the read column of every aggregate has the type,
// nullability and collation MariaDB gives the same aggregate in CREATE
// TABLE … AS SELECT; then rows with NULLs, negative and large decimals,
// strings equal and unequal under a case-insensitive collation, dates and
// binary strings, projected live (with updates and deletes), equal the
// GROUP BY query byte for byte.
func TestAggregateTypes(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "aggtypes")
	if err != nil {
		t.Fatal(err)
	}
	sinkDB, err := bed.MySQL.CreateDatabase(ctx, "aggtypesreads")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.t (id INT PRIMARY KEY, g INT NOT NULL, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, mi MEDIUMINT, "+
		"mu MEDIUMINT UNSIGNED, i INT NOT NULL, iu INT UNSIGNED, b BIGINT, bu BIGINT UNSIGNED, d DECIMAL(10,2), d2 DECIMAL(60,10), "+
		"s VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, dt DATE, dtm DATETIME(3), vb VARBINARY(8))"); err != nil {
		t.Fatal(err)
	}
	cfg := bed.Config("aggt", src+".t")
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB)}}
	cfg.Projections = map[string]config.Projection{"typed": {From: src + ".t", Sink: "reads", GroupBy: []string{"g"}, Aggregates: aggTypes}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	types, err := p.SourceColumns(ctx, bed.MySQL.DB())
	if err != nil {
		t.Fatal(err)
	}
	sink, err := sinks.Open(ctx, bed.MySQL.AdminDSN()+sinkDB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	if err := sink.Exec(ctx, sinks.DDL(p, types)); err != nil {
		t.Fatal(err)
	}
	// The drift check plans every table as DDL made them, and finds a
	// narrowed aggregate column, a narrowed contribution and a narrowed
	// distinct value.
	whole, _ := keyspace.ParseRange("-")
	sharded := &sinks.Sharded{Name: "reads", Shards: []sinks.Shard{{Range: whole, MySQL: sink}}}
	if ds, err := sharded.Drifts(ctx, p, types); err != nil || len(ds) != 0 {
		t.Fatalf("drifts right after DDL: %+v, %v", ds, err)
	}
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE `"+sinkDB+"`.typed MODIFY s_i DECIMAL(20,0) NULL COMMENT 'readside: sum(i)'",
		"ALTER TABLE `"+sinkDB+"`.`"+p.ContributionsTable()+"` MODIFY v_max_s VARCHAR(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL",
		"ALTER TABLE `"+sinkDB+"`.`"+p.DistinctTable("u_s")+"` MODIFY _rs_value VARCHAR(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL COMMENT 'readside: a value of count(distinct s)'"); err != nil {
		t.Fatal(err)
	}
	ds, err := sharded.Drifts(ctx, p, types)
	if err != nil || len(ds) != 3 || ds[0].Column != "s_i" || ds[1].Column != "v_max_s" || ds[1].ReadColumn != "max_s" || ds[0].Safe != true ||
		ds[2].Table != p.DistinctTable("u_s") || ds[2].Column != "_rs_value" || ds[2].ReadColumn != "u_s" {
		t.Fatalf("drifts after narrowing an aggregate, a contribution and a distinct value column: %+v, %v", ds, err)
	}
	for _, d := range ds {
		if _, err := sink.DB().ExecContext(ctx, d.Alter); err != nil {
			t.Fatal(err)
		}
	}
	col := func(n string) string { return "`" + n + "`" }
	var sel []string
	for _, a := range p.Aggregation.Aggregates {
		sel = append(sel, a.SQL(col)+" AS `"+a.Column+"`")
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.ctas AS SELECT g, "+strings.Join(sel, ", ")+" FROM `"+src+"`.t GROUP BY g"); err != nil {
		t.Fatal(err)
	}
	shape := func(db, table string) string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COALESCE(COLLATION_NAME, '') FROM information_schema.COLUMNS "+
			"WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME NOT LIKE '\\_rs\\_%' AND COLUMN_NAME <> 'g' ORDER BY COLUMN_NAME", db, table)
	}
	if want, got := shape(src, "ctas"), shape(sinkDB, "typed"); want != got {
		t.Fatalf("aggregate read column types differ from CREATE TABLE … AS SELECT's: %s\nread table:\n%s\nCTAS:\n%s", testbed.FirstDifference(got, want), got, want)
	}
	t.Logf("%d aggregate read columns typed as CREATE TABLE … AS SELECT types them", len(p.Aggregation.Aggregates))

	runTailer(t, bed, cfg)
	stop := startProjector(t, p, sink, cfg.Kafka.Brokers)
	defer stop()
	tbl := "`" + src + "`.t"
	rows := []string{
		"(1, 1, -128, 255, -32768, -8388608, 16777215, -2147483648, 4294967295, -9223372036854775808, 18446744073709551615, -99999999.99, -99999999999999999999999999999999999999999999999999.9999999999, 'apple', '0000-00-00', '2020-01-01 00:00:00.001', x'00ff')",
		"(2, 1, 127, 0, 32767, 8388607, 0, 2147483647, 0, 9223372036854775807, 18446744073709551615, 99999999.99, 99999999999999999999999999999999999999999999999999.9999999999, 'Banana', '9999-12-31', '2038-01-19 03:14:07.999', x'ff')",
		"(3, 1, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
		"(4, 2, NULL, NULL, NULL, NULL, NULL, 5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
		"(5, 2, 1, 1, 1, 1, 1, -7, 1, 1, 1, 0.01, 0.0000000001, 'x', '2024-02-29', '2024-02-29 23:59:59.500', x'')",
		"(6, 2, 2, 2, 2, 2, 2, 7, 2, 2, 2, -0.03, -0.0000000003, 'X', '2024-03-01', '2024-03-01 00:00:00.000', x'01')",
		"(7, 3, 3, 3, 3, 3, 3, 1, 3, 3, 3, 12.34, 1.5, 'zebra', '1000-01-01', '1000-01-01 00:00:00.000', x'7f')",
		"(8, 3, 4, 4, 4, 4, 4, 2, 4, 4, 4, 56.78, 2.25, 'Yak', '1000-01-02', '1000-01-01 00:00:00.001', x'80')",
	}
	if err := bed.MySQL.Exec(ctx, "INSERT INTO "+tbl+" VALUES "+strings.Join(rows, ", ")); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "UPDATE "+tbl+" SET g = 3, d = -d WHERE id = 1", "DELETE FROM "+tbl+" WHERE id = 8",
		"UPDATE "+tbl+" SET s = 'aardvark', vb = NULL, dt = '0000-00-00' WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	var read []string
	for _, a := range p.Aggregation.Aggregates {
		read = append(read, col(a.Column))
	}
	want := "SELECT g, " + strings.Join(sel, ", ") + " FROM " + tbl + " GROUP BY g ORDER BY g"
	got := "SELECT g, " + strings.Join(read, ", ") + " FROM `" + sinkDB + "`.typed ORDER BY g"
	testbed.Eventually(t, 90*time.Second, func() (bool, string) {
		w, g := testbed.RowsText(t, bed.MySQL.DB(), want), testbed.RowsText(t, bed.MySQL.DB(), got)
		return w == g, fmt.Sprintf("read table differs from the GROUP BY: %s", testbed.FirstDifference(g, w))
	})
}

// TestAggregateSchemaErrors: problems only the source's columns show are
// refused together, each with its fix: a sum over a string, over a
// DOUBLE, an aggregate over a missing column, a nullable group column
// without a filter that keeps NULL out.
func TestAggregateSchemaErrors(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "aggerr")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.t (id INT PRIMARY KEY, g INT, name VARCHAR(10), f DOUBLE, y YEAR, bits BIT(8), d DATE, e ENUM('z','a'), s SET('b','a'))"); err != nil {
		t.Fatal(err)
	}
	cfg := bed.Config("agge", src+".t")
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: config.Secret(bed.MySQL.AdminDSN() + src)}}
	cfg.Projections = map[string]config.Projection{"bad": {From: src + ".t", Sink: "reads", GroupBy: []string{"g"},
		Aggregates: map[string]string{"a": "sum(name)", "b": "sum(f)", "c": "min(ghost)", "d": "avg(y)", "e": "sum(CAST(f AS DECIMAL(20,6)))",
			"h": "sum(bits)", "i": "avg(d)", "j": "max(e)", "k": "min(s)", "l": "max(CONCAT(e))"}}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ps[0].SourceColumns(ctx, bed.MySQL.DB())
	if err == nil {
		t.Fatal("a projection with four bad aggregates was accepted")
	}
	for _, want := range []string{
		`projections.bad.aggregates.a "sum(name)": sum over varchar(10)`, "not a number to sum",
		`projections.bad.aggregates.b "sum(f)": sum over double: FLOAT and DOUBLE sums depend on the order`, "CAST it to DECIMAL",
		`projections.bad.aggregates.c "min(ghost)"`, "ghost",
		`projections.bad.aggregates.d "avg(y)"`,
		`projections.bad.aggregates.h "sum(bits)"`, `projections.bad.aggregates.i "avg(d)"`,
		"projections.bad.group_by column g copies", `add where: "g IS NOT NULL"`,
		// MAX(e) is 'z' on the source (strings), an index says 'a'.
		`projections.bad.aggregates.j "max(e)": max over enum('z','a')`, "compare ENUM and SET values as strings", "max(CONCAT(e))",
		`projections.bad.aggregates.k "min(s)": min over set('b','a')`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in the errors, got:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "aggregates.l") {
		t.Errorf("a max over an ENUM's text was refused: %v", err)
	}
	if strings.Contains(err.Error(), "aggregates.e") {
		t.Errorf("a sum over a DECIMAL cast of a DOUBLE was refused: %v", err)
	}
}

// TestAggregateShardCollation: an aggregate sharded by a string group
// column whose collation calls values with different bytes equal (_ci;
// PAD SPACE, _bin included) is refused with the fix: the source's GROUP
// BY makes 'A' and 'a' one group, while shards are picked by bytes (a
// sharded run split such a group over two rows). Byte-exact strings
// (nopad_bin, VARBINARY) and numbers are accepted.
func TestAggregateShardCollation(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "aggcoll")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.t (id INT PRIMARY KEY, n INT NOT NULL, "+
		"ci VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL, bn VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, "+
		"nopad VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL, vb VARBINARY(10) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		group, shardBy, refused string
	}{
		{"ci", "ci", "utf8mb4_general_ci"},
		{"bn", "bn", "utf8mb4_bin"},
		{"LOWER(ci)", "lower_ci", "utf8mb4_general_ci"},
		{"nopad", "nopad", ""},
		{"vb", "vb", ""},
		{"n", "n", ""},
	} {
		cfg := bed.Config("aggc", src+".t")
		cfg.Sinks = map[string]config.Sink{"reads": {DSN: config.Secret(bed.MySQL.AdminDSN() + src)}}
		cfg.Projections = map[string]config.Projection{"g": {From: src + ".t", Sink: "reads", GroupBy: []string{c.group}, ShardBy: c.shardBy,
			Aggregates: map[string]string{"rows": "count(*)"}}}
		ps, err := projections.Compile(cfg)
		if err != nil {
			t.Fatalf("group by %s: %v", c.group, err)
		}
		_, err = ps[0].SourceColumns(ctx, bed.MySQL.DB())
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("group by %s, sharded by it: refused: %v", c.group, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), "the group column is "+c.refused+", a collation under which values with different bytes are equal") ||
			!strings.Contains(err.Error(), "shard by another group column")):
			t.Errorf("group by %s, sharded by it: %v; want the refusal naming %s and the fix", c.group, err, c.refused)
		}
	}
}
