package projections

import (
	"slices"
	"strings"
	"testing"

	"github.com/readside/readside/config"
)

// joinedProjection is baseConfig's projection with a join copying the
// sender's name.
func joinedProjection(t *testing.T) *Projection {
	t.Helper()
	cfg := baseConfig()
	cfg.Source.Tables = append(cfg.Source.Tables, "chat.users")
	d := cfg.Projections["messages_by_sender"]
	d.Join = []config.Join{{From: "chat.users", On: map[string]string{"id": "sender_id"}, Columns: map[string]string{"sender_name": "name"}}}
	d.OnError = "dlq"
	cfg.Projections["messages_by_sender"] = d
	ps, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ps[0]
}

// TestBackfillColumns: what a backfill may fill, and the fix named for
// what it may not.
func TestBackfillColumns(t *testing.T) {
	p := joinedProjection(t)
	cases := []struct {
		why  string
		cols []string
		want []string // nil: an error containing every one of errs
		errs []string
	}{
		{"an own non-key column is filled", []string{"body"}, []string{"body"}, nil},
		{"duplicates and spaces around a name fold into one", []string{" body", "body"}, []string{"body"}, nil},
		{"nothing named: say what to give", nil, nil, []string{"--backfill needs the read columns to fill"}},
		{"an empty name in the list (a trailing comma)", []string{"body", ""}, nil, []string{"an empty column name"}},
		{"a key column would move rows: rebuild", []string{"id"}, nil, []string{"id is a key column", "readside replay --projection messages_by_sender --rebuild"}},
		{"a joined column needs the parent's topic: rebuild", []string{"sender_name"}, nil, []string{"sender_name is a joined column", "--rebuild"}},
		{"an undeclared column: declare it and plan --apply, listing the declared ones", []string{"bogus"}, nil, []string{"bogus is not a read column of projections.messages_by_sender.columns", "declared: body, created_at, id, sender_id", "readside plan --apply"}},
		{"every problem at once", []string{"id", "bogus"}, nil, []string{"id is a key column", "bogus is not a read column"}},
	}
	for _, c := range cases {
		got, err := p.BackfillColumns(c.cols)
		if c.errs == nil {
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("%s: BackfillColumns(%q) = %q, %v; want %q", c.why, c.cols, got, err, c.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: BackfillColumns(%q) = %q, want an error", c.why, c.cols, got)
			continue
		}
		for _, w := range c.errs {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.why, err, w)
			}
		}
	}
}

// TestBackfillIdentity: the backfill consumes under its own name (its own
// offsets), reads no parent topic and never dead-letters, and leaves the
// projection it copies alone.
func TestBackfillIdentity(t *testing.T) {
	p := joinedProjection(t)
	b := p.Backfill()
	if b.Name != "messages_by_sender__backfill" || b.Table != p.Table {
		t.Errorf("name %s table %s: want its own name on the live table", b.Name, b.Table)
	}
	if len(b.Joins) != 0 || !slices.Equal(b.Topics(), []string{p.Topic}) {
		t.Errorf("topics %v: want only the projection's own topic", b.Topics())
	}
	if b.OnError != "stop" {
		t.Errorf("on_error %s: a backfill must not dead-letter", b.OnError)
	}
	if p.Name != "messages_by_sender" || len(p.Joins) != 1 || p.OnError != "dlq" {
		t.Errorf("the live projection changed: %s, %d joins, on_error %s", p.Name, len(p.Joins), p.OnError)
	}
}

// TestBackfillTag: the tag that decides whether a backfill resumes.
func TestBackfillTag(t *testing.T) {
	a, b := BackfillTag([]string{"body"}), BackfillTag([]string{"body", "note"})
	if a == b {
		t.Errorf("other columns, same tag %s: a backfill would resume from offsets another set of columns reached", a)
	}
	if BackfillTag([]string{"ab", "c"}) == BackfillTag([]string{"a", "bc"}) {
		t.Error("names are not separated in the tag")
	}
	if a != BackfillTag([]string{"body"}) {
		t.Error("the tag is not stable: a restarted backfill would start over")
	}
	if len(a) > 20 || len(b) > 20 {
		t.Errorf("tags %q %q: the bookkeeping's phase column holds 20 characters", a, b)
	}
}

// TestBackfillRefusesAggregatesAndChildren: values a backfill cannot
// compute from the projection's own topic are refused, naming the rebuild.
func TestBackfillRefusesAggregatesAndChildren(t *testing.T) {
	nested := *joinedProjection(t)
	nested.Children = []*Children{{Name: "items", CountColumn: "items_count", Topic: "t.items"}}
	grouped := *joinedProjection(t)
	grouped.Aggregation = &Aggregation{GroupBy: []string{"sender_id"}}
	for _, c := range []struct {
		why  string
		p    *Projection
		cols []string
		errs []string
	}{
		{"an aggregate's values need every source row's contribution", &grouped, []string{"body"}, []string{"aggregate projection", "--rebuild"}},
		{"a children array is built from the child state", &nested, []string{"items"}, []string{"items is a nested children column (projections.messages_by_sender.children.items)", "--rebuild"}},
		{"so is its count", &nested, []string{"items_count"}, []string{"items_count is a nested children column", "--rebuild"}},
	} {
		_, err := c.p.BackfillColumns(c.cols)
		if err == nil {
			t.Errorf("%s: BackfillColumns(%q) accepted", c.why, c.cols)
			continue
		}
		for _, w := range c.errs {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.why, err, w)
			}
		}
	}
	if got, err := nested.BackfillColumns([]string{"body"}); err != nil || !slices.Equal(got, []string{"body"}) {
		t.Errorf("an own column of a projection with children: %q, %v", got, err)
	}
	if b := nested.Backfill(); len(b.Children) != 0 || !slices.Equal(b.Topics(), []string{nested.Topic}) {
		t.Errorf("the backfill of a projection with children reads %v, want only its own topic", b.Topics())
	}
}
