package verify_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
)

// TestVerifyGroupsUnderServerCollation: an aggregate grouped by text in a
// collation readside's own comparisons do not know (latin1_german2_ci,
// where 'Müller' and 'Mueller', 'straße' and 'STRASSE' are one group).
// The source's GROUP BY shows one row's spelling of a group, the sink the
// one its group row was first written with, and one read of the source
// may show another spelling than the next. Verify matches such groups,
// and compares their MIN() of such text, as the servers weigh them: a
// group respelled on the sink is EQUAL; a group deleted on the sink is
// named missing after its re-checks (a re-check finding the group under
// another spelling is the same group), an edited count is named, and
// --repair makes the table EQUAL again.
func TestVerifyGroupsUnderServerCollation(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "vgc")
	if err != nil {
		t.Fatal(err)
	}
	sinkDB, err := bed.MySQL.CreateDatabase(ctx, "vgcreads")
	if err != nil {
		t.Fatal(err)
	}
	people := "`" + src + "`.people"
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE "+people+" (id INT PRIMARY KEY,"+
		" last_name VARCHAR(30) CHARACTER SET latin1 COLLATE latin1_german2_ci NOT NULL,"+
		" tag VARCHAR(30) CHARACTER SET latin1 COLLATE latin1_german2_ci NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	cfg := bed.Config("vgc", src+".people")
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB)}}
	cfg.Projections = map[string]config.Projection{"by_last": {From: src + ".people", Sink: "reads",
		GroupBy:    []string{"last_name"},
		Aggregates: map[string]string{"people": "count(*)", "first_tag": "min(tag)", "tags": "count(distinct tag)"}}}
	r := runOne(t, bed, cfg, src)
	// Each group's spellings, the one written first last: the sink's row
	// is spelled as the first contribution, the source's GROUP BY not so.
	groups := [][]string{
		{"mueller", "Müller", "MÜLLER", "Mueller"},
		{"STRASSE", "straße", "Strasse"},
		{"Ärger", "aerger", "AERGER"},
		{"Zoë"},
		{"adams", "Adams"},
	}
	var load []string
	id := 0
	for _, g := range groups {
		for i := range g {
			id++
			name := g[len(g)-1-i]
			load = append(load, fmt.Sprintf("INSERT INTO %s VALUES (%d, '%s', '%s')", people, id, name, strings.ToUpper(name)))
		}
	}
	if err := bed.MySQL.Exec(ctx, load...); err != nil {
		t.Fatal(err)
	}
	// Both sides list the groups in the collation's order.
	testbed.Eventually(t, 2*time.Minute, func() (bool, string) {
		want := rowsText(t, "SELECT COUNT(*) FROM "+people+" GROUP BY last_name ORDER BY last_name")
		got := rowsText(t, "SELECT people FROM `"+sinkDB+"`.by_last ORDER BY last_name")
		return got == want, "group sizes on the sink: " + testbed.FirstDifference(got, want)
	})
	v := r.verifier(t, r.stats)
	if rep := runVerify(t, v); rep.Drift() != 0 || rep.Unsettled != 0 || rep.SourceRows != int64(len(groups)) {
		t.Fatalf("converged projection: drift %d, unsettled %d, %d groups (want %d)", rep.Drift(), rep.Unsettled, rep.SourceRows, len(groups))
	}
	sink := r.sink.Shards[0].DB()
	for _, q := range []string{
		// Respelled: the same group, the same smallest tag.
		"UPDATE by_last SET last_name = 'MÜLLER', first_tag = 'MÜLLER' WHERE last_name = 'mueller'",
		"DELETE FROM by_last WHERE last_name = 'strasse'",
		"UPDATE by_last SET people = people + 1 WHERE last_name = 'aerger'",
	} {
		if _, err := sink.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rep := runVerify(t, v)
	var got []string
	for _, d := range rep.Samples {
		got = append(got, d.Kind)
		if d.Kind == "different" && (len(d.Columns) != 1 || d.Columns[0].Name != "people") {
			t.Errorf("the edited group: differing columns %+v, want people only", d.Columns)
		}
	}
	slices.Sort(got)
	if strings.Join(got, ";") != "different;missing" || rep.Unsettled != 0 {
		t.Fatalf("verify of the edited groups: %q, %d unsettled; want one different, one missing", got, rep.Unsettled)
	}
	request := func(ctx context.Context, table, where string) error {
		return cdc.RequestSnapshot(ctx, cfg.Source.DSN.Reveal(), cfg.Source.TLS, cfg.Source.Snapshot.SignalDB, cfg.Source.ServerID, table, where)
	}
	res, err := v.Repair(ctx, rep, request, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Remaining != 0 {
		t.Fatalf("repair left %d groups differing", res.Remaining)
	}
	if rep := runVerify(t, v); rep.Drift() != 0 {
		t.Fatalf("after repair: drift %d", rep.Drift())
	}
}
