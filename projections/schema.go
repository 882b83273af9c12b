package projections

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/readside/readside/internal/sourcedb"
)

// Types are the column definitions a projection's sink tables need, taken
// from the source columns they copy so every value fits exactly.
type Types struct {
	// Read maps every read column (own and joined) to its definition.
	// Joined columns are always NULL-able: a child may have no parent.
	Read map[string]string
	// JoinKey maps, per join (Projection.Joins order), each parent key
	// column to its definition, for the join's state table.
	JoinKey []map[string]string
	// KeptLink maps, per join, each parent key column a root join's link
	// names to the type an aggregate's contributions keep the link in
	// (keptLinkType); where it has none, the key's JoinKey type.
	KeptLink []map[string]string
	// Contribution maps, for an aggregate projection, each aggregate to
	// the definition of its column in the contributions table (Read has
	// the aggregates' read columns, and each avg's hidden running sum
	// under AvgSumColumn; aggregate_compile.go).
	Contribution map[string]string
	// Children are, per children entry (Projection.Children order), the
	// definitions of its state and link tables' columns.
	Children []ChildTypes
	// GroupRead maps each group column a joined parent gives
	// (Aggregation.Joined) to its read table definition, NOT NULL: Read
	// has the NULL-able one of the join state.
	GroupRead map[string]string
}

// KeptLinkType is the definition of the contributions table's column of
// join i's link to parent key column parent (KeptLink, else JoinKey).
func (t Types) KeptLinkType(i int, parent string) string {
	if i < len(t.KeptLink) {
		if def, ok := t.KeptLink[i][parent]; ok {
			return def
		}
	}
	if i < len(t.JoinKey) {
		return t.JoinKey[i][parent]
	}
	return ""
}

// sourceTable is one source table's columns as information_schema has them.
type sourceTable struct {
	types    map[string]string // column → type with charset, without nullability
	nullable map[string]bool
	// defaults are every column's default as information_schema shows
	// it, for messages; nullDefault ("") for a NULL default (not
	// generated), which a column's events written before it was added
	// are read with (addedcolumns.go).
	defaults map[string]string
	// excluded: source.exclude_columns of this table (for messages).
	excluded []string
	json     map[string]bool // MariaDB JSON columns, read for children only (readJSONColumns)
	pk       []string
	columns  []string // in table order, for messages
	// masked are the ENUM and SET columns whose member names
	// information_schema may show with a '?' for a character it cannot
	// (resolveMembers reads them from the server).
	masked []maskedMembers
}

// maskedMembers is an ENUM or SET column whose COLUMN_TYPE may mask a
// member name's character.
type maskedMembers struct {
	column, kind, charset, collation string
	n                                int
}

func readSourceTable(ctx context.Context, db *sql.DB, schema, table string) (*sourceTable, error) {
	// MariaDB shows a NULL default as the text NULL (a string literal
	// 'NULL' comes quoted); MySQL as SQL NULL (and a string as it is).
	rows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME, COLUMN_TYPE, COALESCE(CHARACTER_SET_NAME, ''), COALESCE(COLLATION_NAME, ''), IS_NULLABLE,
		IS_NULLABLE = 'YES' AND EXTRA NOT LIKE '%GENERATED%' AND (COLUMN_DEFAULT IS NULL OR (COLUMN_DEFAULT = 'NULL' AND @@version LIKE '%MariaDB%')),
		COALESCE(COLUMN_DEFAULT, ''), EXTRA
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, schema, table)
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s.%s: %w", schema, table, err)
	}
	defer rows.Close()
	t := &sourceTable{types: map[string]string{}, nullable: map[string]bool{}, defaults: map[string]string{}}
	for rows.Next() {
		var name, typ, cs, coll, null, dflt, extra string
		var nullDefault bool
		if err := rows.Scan(&name, &typ, &cs, &coll, &null, &nullDefault, &dflt, &extra); err != nil {
			return nil, err
		}
		switch {
		case nullDefault:
			t.defaults[name] = nullDefaultMark
		case strings.Contains(extra, "GENERATED"):
			t.defaults[name] = "generated (" + strings.ToLower(extra) + ")"
		case dflt == "" && null == "NO":
			t.defaults[name] = "NOT NULL, no default"
		default:
			t.defaults[name] = "DEFAULT " + dflt
		}
		def := typ
		kind, _, _ := strings.Cut(strings.ToLower(typ), "(")
		hasMembers := kind == "enum" || kind == "set"
		// A binary string's type says so itself (VARBINARY, BLOB); an
		// ENUM or SET of the binary set does not, and without it the
		// read column would compare its members under the sink's
		// default collation ('a' and 'A' one member, refused).
		if cs != "" && (cs != "binary" || hasMembers) {
			def += " CHARACTER SET " + cs + " COLLATE " + coll
		}
		if hasMembers {
			if members := sourcedb.ParseMembers(typ); sourcedb.MembersMayBeMasked(cs, members) {
				t.masked = append(t.masked, maskedMembers{column: name, kind: strings.ToUpper(kind), charset: cs, collation: coll, n: len(members)})
			}
		}
		t.types[name] = def
		t.columns = append(t.columns, name)
		t.nullable[name] = null == "YES"
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(t.types) == 0 {
		return nil, nil
	}
	pkRows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY'`+sourcedb.NotRowEnd("STATISTICS")+` ORDER BY SEQ_IN_INDEX`, schema, table)
	if err != nil {
		return nil, err
	}
	defer pkRows.Close()
	for pkRows.Next() {
		var c string
		if err := pkRows.Scan(&c); err != nil {
			return nil, err
		}
		t.pk = append(t.pk, c)
	}
	return t, pkRows.Err()
}

// readSourceTable is readSourceTable with the table's source.keys, when
// it has some, as its key: the tailer keys its events by them, so they are
// what a projection must key, join and delete by.
func (p *Projection) readSourceTable(ctx context.Context, db *sql.DB, schema, table string) (*sourceTable, error) {
	t, err := readSourceTable(ctx, db, schema, table)
	if t != nil {
		if k := p.SourceKeyOf(schema, table); k != nil {
			t.pk = k
		}
		t.exclude(p.excluded, schema+"."+table+".")
		if err == nil {
			if err = t.resolveMembers(ctx, db, p.scratchDB, schema, table); err != nil {
				err = fmt.Errorf("projections.%s: %w", p.Name, err)
			}
		}
	}
	return t, err
}

// resolveMembers gives each ENUM and SET column whose COLUMN_TYPE may
// mask a member name ('👍' shown as '?') its exact names, read from the
// server: a read table made from the masked ones would refuse the rows
// holding that member. The temporary table they are read through goes to
// scratch (source.snapshot.signal_db, where readside's user may create
// one), else to the table's own database (before the first run has
// created the signal database).
func (t *sourceTable) resolveMembers(ctx context.Context, db *sql.DB, scratch, schema, table string) error {
	for _, m := range t.masked {
		if _, kept := t.types[m.column]; !kept {
			continue // excluded
		}
		exact, err := sourcedb.ExactMembers(ctx, db, scratch, schema, table, m.column, m.kind, m.n)
		if err != nil && scratch != "" && scratch != schema {
			if own, ownErr := sourcedb.ExactMembers(ctx, db, "", schema, table, m.column, m.kind, m.n); ownErr == nil {
				exact, err = own, nil
			}
		}
		if err != nil {
			// Every column of a table read is typed, the ones no
			// projection copies too.
			return fmt.Errorf("%w, or list %s.%s.%s in source.exclude_columns if no projection reads it", err, schema, table, m.column)
		}
		t.types[m.column] = sourcedb.MembersType(m.kind, exact) + " CHARACTER SET " + m.charset + " COLLATE " + m.collation
	}
	return nil
}

// exclude takes the columns source.exclude_columns names (entries with
// prefix "db.table.") out of t: no event carries them, so a projection
// may not read them, and the checks say so before run meets it.
func (t *sourceTable) exclude(entries []string, prefix string) {
	for _, e := range entries {
		col, ok := strings.CutPrefix(e, prefix)
		if !ok {
			continue
		}
		if _, has := t.types[col]; !has {
			continue
		}
		delete(t.types, col)
		delete(t.nullable, col)
		delete(t.defaults, col)
		t.columns = slices.DeleteFunc(t.columns, func(c string) bool { return c == col })
		t.excluded = append(t.excluded, col)
	}
}

// has reports whether col exists; when not, it is "; its columns are …"
// for the message naming the fix.
func (t *sourceTable) has(col string) (bool, string) {
	if _, ok := t.types[col]; ok {
		return true, ""
	}
	if slices.Contains(t.excluded, col) {
		return false, " (" + col + " is in source.exclude_columns: no event carries it)"
	}
	return false, " (its columns: " + strings.Join(t.columns, ", ") + ")"
}

// unresolved reports a column Compile could not make (its problem is
// Compile's): no source column and no expression.
func (c Column) unresolved() bool { return c.Source == "" && c.typed == nil }

func (t *sourceTable) def(col string, forceNull bool) string {
	if forceNull || t.nullable[col] {
		return t.types[col] + " NULL"
	}
	return t.types[col] + " NOT NULL"
}

// SourceColumns reads the source tables' column definitions (type,
// charset, nullability) and primary keys, checks the declaration against
// them — every problem at once — and returns the sink column types.
func (p *Projection) SourceColumns(ctx context.Context, db *sql.DB) (Types, error) {
	out := Types{Read: map[string]string{}}
	// The tables read, by db.table: what an event written before one of
	// their columns was added lacks (addedcolumns.go).
	read := map[string]*sourceTable{}
	defer func() { p.noteAddedColumns(read) }()
	readTable := func(schema, tbl string) (*sourceTable, error) {
		t, err := p.readSourceTable(ctx, db, schema, tbl)
		if t != nil {
			read[schema+"."+tbl] = t
		}
		return t, err
	}
	src, err := readTable(p.SourceDB, p.SourceTbl)
	if err != nil {
		return out, err
	}
	var errs []error
	if src == nil {
		// The checks of the joins and of the child tables do not need it.
		errs = append(errs, fmt.Errorf("projections.%s.from: %s.%s does not exist on the source: correct from, create the table, or grant the source user SELECT on it", p.Name, p.SourceDB, p.SourceTbl))
	} else {
		errs = p.checkOwnTable(src, &out)
	}
	children, cerrs, err := p.checkChildren(func(schema, tbl string) (*sourceTable, error) {
		t, err := readTable(schema, tbl)
		if err == nil {
			err = readJSONColumns(ctx, db, schema, tbl, t)
		}
		return t, err
	}, src)
	if err != nil {
		return out, err
	}
	out.Children = children
	errs = append(errs, cerrs...)
	parents := map[*Join]*sourceTable{}
	for _, j := range p.Joins {
		keyTypes, keptLinks := map[string]string{}, map[string]string{}
		out.JoinKey = append(out.JoinKey, keyTypes)
		out.KeptLink = append(out.KeptLink, keptLinks)
		key := fmt.Sprintf("projections.%s.join[%d]", p.Name, j.N-1)
		parent, err := readTable(j.ParentDB, j.ParentTbl)
		if err != nil {
			return out, err
		}
		if parent == nil {
			errs = append(errs, fmt.Errorf("%s.from: %s.%s does not exist on the source: correct from, create the table, or grant the source user SELECT on it", key, j.ParentDB, j.ParentTbl))
			continue
		}
		parents[j] = parent
		errs = append(errs, checkVia(p, j, parents[j.Via])...)
		var on []string
		for _, o := range j.On {
			on = append(on, o.Parent)
			if ok, cols := parent.has(o.Parent); !ok {
				errs = append(errs, fmt.Errorf("%s.on.%s: column %q does not exist in %s.%s%s: join on the parent's primary key %v", key, o.Parent, o.Parent, j.ParentDB, j.ParentTbl, cols, parent.pk))
				continue
			}
			keyTypes[o.Parent] = parent.def(o.Parent, false)
			below, belowName := src, p.SourceDB+"."+p.SourceTbl
			if j.Via != nil {
				below, belowName = parents[j.Via], j.Via.ParentDB+"."+j.Via.ParentTbl
			}
			if below == nil || !slices.Contains(parent.pk, o.Parent) {
				continue // no link table, or not the parent's key: refused below
			}
			if link, ok := below.types[o.Child]; ok {
				if j.Via == nil {
					keptLinks[o.Parent] = keptLinkType(link, parent.types[o.Parent])
				}
				if err := linkTypeError(key+".on."+o.Parent, belowName, o.Child, link, j.ParentDB+"."+j.ParentTbl, o.Parent, parent.types[o.Parent], linkUseOf(p)); err != nil {
					errs = append(errs, err)
				}
			}
		}
		var missing []string
		for _, pk := range parent.pk {
			found := false
			for _, o := range on {
				found = found || o == pk
			}
			if !found {
				missing = append(missing, pk)
			}
		}
		if (len(parent.pk) == 0 || len(missing) > 0) && !j.onBroken {
			errs = append(errs, fmt.Errorf("%s.on names %v, but the parent %s.%s's primary key is %v: join on the parent's whole primary key, so each child has at most one parent row",
				key, on, j.ParentDB, j.ParentTbl, parent.pk))
		}
		for _, c := range j.Columns {
			if ok, cols := parent.has(c.Source); !ok {
				if c.Carried() {
					continue // the join hanging off this one names the fix (checkVia)
				}
				errs = append(errs, fmt.Errorf("%s.columns.%s: parent column %q does not exist in %s.%s%s: map %s to one of them", key, c.Name, c.Source, j.ParentDB, j.ParentTbl, cols, c.Name))
				continue
			}
			out.Read[c.Name] = parent.def(c.Source, true)
		}
	}
	errs = append(errs, p.checkJoinedGroups(src, parents, &out)...)
	if src != nil && len(src.pk) > 0 {
		errs = append(errs, p.checkReadKey(&out)...)
	}
	return out, errors.Join(errs...)
}

// checkOwnTable checks p's columns, key, aggregates and filter against its
// own source table src, putting their read column definitions in out.
func (p *Projection) checkOwnTable(src *sourceTable, out *Types) []error {
	var errs []error
	for i, c := range p.Columns {
		if c.unresolved() {
			continue // Compile named its problem: nothing to look up
		}
		if c.typed != nil {
			def, err := p.typeComputed(c, src, i < len(p.Key))
			if err == nil {
				out.Read[c.Name] = def
				continue
			}
			if !errors.Is(err, errCopy) {
				errs = append(errs, fmt.Errorf("projections.%s.columns.%s %q: %w", p.Name, c.Name, c.Source, err))
				continue
			}
		}
		if ok, cols := src.has(c.Source); !ok {
			errs = append(errs, fmt.Errorf("projections.%s.columns.%s: source column %q does not exist in %s.%s%s: map %s to one of them", p.Name, c.Name, c.Source, p.SourceDB, p.SourceTbl, cols, c.Name))
			continue
		}
		if i < len(p.Key) {
			// A read key is never NULL: the source column is NOT NULL, or
			// the filter keeps rows with NULL there out (NullableKeys).
			out.Read[c.Name] = src.types[c.Source] + " NOT NULL"
			continue
		}
		out.Read[c.Name] = src.def(c.Source, false)
	}
	errs = append(errs, p.NullableKeys(func(col string) bool { return src.nullable[col] })...)
	if len(src.pk) == 0 {
		errs = append(errs, fmt.Errorf("projections.%s.from: %s.%s has no primary key: readside cannot tell its rows apart; add a primary key to the source table, or name its unique NOT NULL columns in source.keys", p.Name, p.SourceDB, p.SourceTbl))
	} else if p.Aggregation != nil {
		errs = append(errs, p.typeAggregates(src, out)...)
		errs = append(errs, p.checkAggregateKeys(out)...)
		if err := p.checkShardCollation(out.Read); err != nil {
			errs = append(errs, err)
		}
	} else if len(p.Key) > 0 && !slices.ContainsFunc(p.Key, func(k string) bool { return p.column(k).unresolved() }) {
		// (A key Compile refused would only repeat its problem here.)
		if err := p.CheckSourceKey(src.pk); err != nil {
			errs = append(errs, err)
		}
	}
	if p.Where != nil {
		for _, c := range p.Where.Columns() {
			if ok, cols := src.has(c); !ok {
				errs = append(errs, fmt.Errorf("projections.%s.where: column %q does not exist in %s.%s%s: the filter reads source columns; use one of them", p.Name, c, p.SourceDB, p.SourceTbl, cols))
			}
		}
		if err := p.Where.typeExpr(src); err != nil {
			errs = append(errs, fmt.Errorf("projections.%s.where %q: %w", p.Name, p.Where.String(), err))
		}
	}
	return errs
}

// NullableKeys checks that no read key column can be NULL: each key column
// copies a source column that is NOT NULL (nullable reports which are not),
// or the where filter never passes a row with NULL in it
// (Filter.ExcludesNull). Each problem names the filter as the fix and the
// source change as the alternative.
func (p *Projection) NullableKeys(nullable func(sourceCol string) bool) []error {
	var errs []error
	for _, k := range p.Key {
		c := p.column(k)
		if c.Computed() || !nullable(c.Source) || p.Where.ExcludesNull(c.Source) {
			continue
		}
		what := "key column " + k
		if p.Aggregation != nil {
			what = "group_by column " + k
		}
		if k == p.ShardBy {
			what += " (shard_by)"
		}
		fix := fmt.Sprintf("add where: %q", c.Source+" IS NOT NULL")
		if p.Where != nil {
			fix = fmt.Sprintf("extend where to %q", "("+p.Where.String()+") AND "+c.Source+" IS NOT NULL")
		}
		errs = append(errs, fmt.Errorf("projections.%s.%s copies %s.%s.%s, which is nullable, and where does not exclude NULL for it: a read key cannot be NULL; %s (rows with %s NULL are then left out of the read table), or make %s NOT NULL in the source",
			p.Name, what, p.SourceDB, p.SourceTbl, c.Source, fix, c.Source, c.Source))
	}
	return errs
}
