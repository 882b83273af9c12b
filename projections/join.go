package projections

import (
	"fmt"
	"sort"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
)

// Join is one compiled `join:` entry: the parent table whose columns are
// copied into every read row that references it.
type Join struct {
	N         int // 1-based position in the declaration
	ParentDB  string
	ParentTbl string
	Topic     string
	// On pairs each parent column with the read column holding the child's
	// value for it (the child source column must be mapped in columns).
	On []JoinOn
	// Columns map read columns to parent columns.
	Columns []Column
}

// JoinOn is one column pair of a join condition.
type JoinOn struct {
	Parent string // parent source column
	Child  string // child source column
	Read   string // read column that copies Child
}

// VersionColumn holds, per read row, the version of the parent row whose
// columns it shows: fan-out only moves it forward.
func (j *Join) VersionColumn() string { return fmt.Sprintf("_rs_v_join%d", j.N) }

// StateTable is the sink table holding the latest parent rows (and the
// versions of absent ones) for this join, on every shard.
func (j *Join) StateTable(p *Projection) string {
	name := fmt.Sprintf("_readside_join_%s_%d", p.Name, j.N)
	if len(name) > 64 {
		name = fmt.Sprintf("_readside_join_%x_%d", xxhashString(p.Name), j.N)
	}
	return name
}

// compileJoin checks one join entry. Every problem names its key.
func compileJoin(cfg config.Config, p *Projection, d config.Projection, i int, jd config.Join, captured map[string]bool) (*Join, []error) {
	var errs []error
	key := fmt.Sprintf("projections.%s.join[%d]", p.Name, i)
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	db, tbl, ok := config.SplitTable(jd.From)
	if !ok {
		bad("%s.from %q: want db.table", key, jd.From)
		return nil, errs
	}
	if !captured[jd.From] {
		bad("%s.from %s is not in source.tables: add it there so its changes reach the join", key, jd.From)
	}
	if jd.From == d.From {
		bad("%s.from %s joins the projection's own table: self-joins are not supported", key, jd.From)
	}
	j := &Join{N: i + 1, ParentDB: db, ParentTbl: tbl, Topic: event.TopicFor(cfg.Kafka.TopicPrefix, db, tbl)}
	if len(jd.On) == 0 {
		bad("%s.on is empty: map each parent key column to this projection's source column, e.g. {id: customer_id}", key)
	}
	parents := make([]string, 0, len(jd.On))
	for pc := range jd.On {
		parents = append(parents, pc)
	}
	sort.Strings(parents)
	for _, pc := range parents {
		child := jd.On[pc]
		read := ""
		for _, c := range p.Columns {
			if c.Source == child {
				read = c.Name
				break
			}
		}
		if read == "" {
			bad("%s.on.%s: source column %q is not mapped in projections.%s.columns: add it (fan-out finds the read rows by it)", key, pc, child, p.Name)
			continue
		}
		j.On = append(j.On, JoinOn{Parent: pc, Child: child, Read: read})
	}
	if len(jd.Columns) == 0 {
		bad("%s.columns is empty: map read columns to parent columns, e.g. {customer_name: name}", key)
	}
	names := make([]string, 0, len(jd.Columns))
	for c := range jd.Columns {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		if _, clash := d.Columns[c]; clash {
			bad("%s.columns.%s: %s is already a column of projections.%s.columns: rename one of them", key, c, c, p.Name)
			continue
		}
		if why := readColumnProblem(c); why != "" {
			bad("%s.columns.%s: %s: rename the column", key, c, why)
			continue
		}
		for _, other := range p.Joins {
			for _, oc := range other.Columns {
				if oc.Name == c {
					bad("%s.columns.%s: already filled by join[%d]: rename one of them", key, c, other.N-1)
				}
			}
		}
		j.Columns = append(j.Columns, Column{Name: c, Source: jd.Columns[c]})
	}
	return j, errs
}
