package projections

// A backfill fills read columns added to a projection's `columns` into
// the rows already in its read table, from the projection's own topic,
// without a rebuild: `readside replay --projection P --backfill col,...`.
// The design and its argument are in docs/design/backfill.md, "Backfilling
// an added column".

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"

	"github.com/readside/readside/config"
)

// BackfillSuffix names a backfill's own identity (Projection.Backfill): its
// stored offsets and its row in the sink's rebuild bookkeeping.
const BackfillSuffix = "__backfill"

// Backfill is the projection a backfill of p consumes as: the same
// declaration under its own name, so its offsets are its own and a
// restarted backfill resumes where it stopped. It has no joins (a
// backfilled column is one of p's own, so parent topics carry nothing it
// needs and are not read) and never dead-letters: a row the sink refuses
// stops the backfill, which can be run again once fixed.
func (p *Projection) Backfill() *Projection {
	b := p.WithName(p.Name + BackfillSuffix)
	b.Joins = nil
	// Its batches come from the projection's own topic only: the nested
	// arrays are not backfilled (BackfillColumns refuses them).
	b.Children = nil
	b.OnError = config.OnErrorStop
	return b
}

// BackfillColumns checks that cols (read column names) can be backfilled
// from p's own topic and returns them in Projection.Columns order, without
// duplicates. A key column cannot be added to an existing table (its rows
// would change keys) and a joined column comes from a parent's topic and
// state table: both are refused, naming the rebuild that replaces them.
func (p *Projection) BackfillColumns(cols []string) ([]string, error) {
	if len(cols) == 0 {
		return nil, fmt.Errorf("--backfill needs the read columns to fill, comma-separated (columns of projections.%s.columns)", p.Name)
	}
	rebuild := "readside replay --projection " + p.Name + " --rebuild"
	if p.Aggregation != nil {
		return nil, fmt.Errorf("--backfill: projections.%s is an aggregate projection: each group's values add up every source row's contribution, which the state table on the sink keeps and a backfill does not fill; %s instead", p.Name, rebuild)
	}
	nested := map[string]string{}
	for _, c := range p.Children {
		nested[c.Name], nested[c.CountColumn] = c.Name, c.Name
	}
	joined := map[string]bool{}
	for _, j := range p.Joins {
		for _, c := range j.Columns {
			joined[c.Name] = true
		}
	}
	var own []string
	for _, c := range p.Columns {
		own = append(own, c.Name)
	}
	want := map[string]bool{}
	var errs []string
	for _, c := range cols {
		c = strings.TrimSpace(c)
		switch {
		case c == "":
			errs = append(errs, "an empty column name (the list is comma-separated, without spaces around commas)")
		case slices.Contains(p.Key, c):
			errs = append(errs, fmt.Sprintf("%s is a key column of projections.%s: a key change moves every row, %s instead", c, p.Name, rebuild))
		case nested[c] != "":
			errs = append(errs, fmt.Sprintf("%s is a nested children column (projections.%s.children.%s): it is built from the child rows' state on the sink, which a backfill does not read; %s instead", c, p.Name, nested[c], rebuild))
		case joined[c]:
			errs = append(errs, fmt.Sprintf("%s is a joined column (projections.%s.join): its values come from the parent's topic and join state, which a backfill does not read; %s instead", c, p.Name, rebuild))
		case !slices.Contains(own, c):
			names := slices.Clone(own)
			sort.Strings(names)
			errs = append(errs, fmt.Sprintf("%s is not a read column of projections.%s.columns (declared: %s): add it there and run readside plan --apply first", c, p.Name, strings.Join(names, ", ")))
		default:
			want[c] = true
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("--backfill %s: %s", strings.Join(cols, ","), strings.Join(errs, "; "))
	}
	var out []string
	for _, c := range own {
		if want[c] {
			out = append(out, c)
		}
	}
	return out, nil
}

// BackfillTag names a set of backfilled columns in a few characters (the
// sink's rebuild bookkeeping keeps 20): a backfill resumes from its stored
// offsets only when the tag it left is its own, since offsets a backfill
// of other columns reached say nothing about these.
func BackfillTag(cols []string) string {
	h := fnv.New64a()
	for _, c := range cols {
		h.Write([]byte(c))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("backfill %x", h.Sum64()>>32)
}
