package sinks

// Drift: an existing read table, and the state table of each of its
// joins, compared with what `readside plan` would create for it. The source's schema moves on (a widened column, a new
// ENUM member) and so does the declaration (a column removed from or
// added to `columns`), while CREATE TABLE IF NOT EXISTS leaves an existing
// table alone; rows then fail in the sink long after the change. Each
// difference is a Drift naming the column, both definitions and the ALTER
// that closes it. Only changes that keep every stored value are Safe
// (`plan --apply` runs them); the others name a rebuild, which creates the
// table afresh from the topics.

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/readside/readside/expr"
	"github.com/readside/readside/internal/sourcedb"
	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
)

// Column is one read-table column's definition, as planned or as the
// sink's information_schema has it.
type Column struct {
	Name      string
	Type      string // COLUMN_TYPE as the server writes it: varchar(16), bigint(20) unsigned
	Charset   string // "" when the column has none or the plan pins none
	Collation string
	Nullable  bool
	// Default is the column's DEFAULT clause value ("" and HasDefault
	// false: none).
	Default    string
	HasDefault bool
	Key        bool // part of the primary key
	// Groups: the column's collation decides which values are one group
	// or one distinct value (an aggregate's group column, a distinct
	// value). A change of it cannot be followed: values the old one made
	// one are merged in the stored counts and sums for good.
	Groups  bool
	Comment string // planned only: restated by MODIFY, which would drop it
}

// Drift is one difference between a planned and an existing column of a
// read table or of a join's state table.
type Drift struct {
	Shard  int    // index in Sharded.Shards
	Table  string // the sink table: the read table or a join's state table
	Column string // the column in Table
	// ReadColumn is the read column Column is for (a state table's copied
	// column is named after it), so messages can name its config key;
	// Column itself for the read table and a state table's own columns.
	ReadColumn string
	Planned    string // definition the plan wants, "" when the column is no longer planned
	Existing   string // definition on the sink, "" when the column is missing
	// Alter closes the difference. For an unsafe one it is what a user
	// could run knowing values may be lost; the fix is a rebuild.
	Alter string
	// Safe: Alter keeps every stored value, so `plan --apply` runs it.
	Safe bool
	// Harmless: rows still apply (an unplanned column that is nullable
	// or has a default); reported as a warning, never applied.
	Harmless bool
	// Silent: the sink stores some planned value in the existing column
	// as another value without an error (roundsSilently): no refusal
	// will ever say so.
	Silent bool
	Why    string // what the difference is, in words
}

// PlannedColumns are the columns DDL(p, types) gives p's read table.
func PlannedColumns(p *projections.Projection, types projections.Types) []Column {
	if p.Aggregation != nil {
		return plannedAggregateColumns(p, types)
	}
	var out []Column
	for _, c := range p.Columns {
		col := parseDef(c.Name, types.Read[c.Name])
		col.Key = slices.Contains(p.Key, c.Name)
		out = append(out, col)
	}
	out = append(out, plannedJoinColumns(p, types)...)
	for _, c := range p.Children {
		out = append(out, childReadColumns(c)...)
	}
	return append(out, Column{Name: "_rs_version", Type: "bigint unsigned", Comment: "readside: source version of this row"})
}

// plannedJoinColumns are the read columns p's joins fill, and their
// versions.
func plannedJoinColumns(p *projections.Projection, types projections.Types) []Column {
	var out []Column
	for _, j := range p.Joins {
		for _, c := range j.Columns {
			col := parseDef(c.Name, types.Read[c.Name])
			col.Comment = fmt.Sprintf("readside: %s.%s.%s via join %d", j.ParentDB, j.ParentTbl, c.Source, j.N)
			out = append(out, col)
		}
		out = append(out, Column{Name: j.VersionColumn(), Type: "bigint unsigned", Default: "0", HasDefault: true,
			Comment: fmt.Sprintf("readside: version of the %s.%s row shown", j.ParentDB, j.ParentTbl)})
	}
	return out
}

// parseDef splits a projections.Types definition ("varchar(16)
// CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL").
func parseDef(name, def string) Column {
	c := Column{Name: name}
	switch {
	case strings.HasSuffix(def, " NOT NULL"):
		def = strings.TrimSuffix(def, " NOT NULL")
	case strings.HasSuffix(def, " NULL"):
		def, c.Nullable = strings.TrimSuffix(def, " NULL"), true
	}
	if typ, cs, ok := strings.Cut(def, " CHARACTER SET "); ok {
		def = typ
		c.Charset, c.Collation, _ = strings.Cut(cs, " COLLATE ")
	}
	c.Type = def
	return c
}

// Definition renders c as a column definition for CREATE or ALTER.
func (c Column) Definition() string {
	s := c.Type
	if c.Charset != "" {
		s += " CHARACTER SET " + c.Charset
		if c.Collation != "" {
			s += " COLLATE " + c.Collation
		}
	}
	if c.Nullable {
		s += " NULL"
	} else {
		s += " NOT NULL"
	}
	if c.HasDefault {
		s += " DEFAULT " + c.Default
	}
	if c.Comment != "" {
		s += " COMMENT " + sqlquote.Literal(c.Comment)
	}
	return s
}

// ReadColumns reads table's columns on this sink; none when the table
// does not exist.
func (s *MySQL) ReadColumns(ctx context.Context, table string) ([]Column, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT COLUMN_NAME, COLUMN_TYPE, COALESCE(CHARACTER_SET_NAME, ''), COALESCE(COLLATION_NAME, ''),
		IS_NULLABLE, COLUMN_DEFAULT, COLUMN_KEY FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, table)
	if err != nil {
		return nil, fmt.Errorf("reading the columns of read table %s: %w", table, err)
	}
	defer rows.Close()
	var out []Column
	for rows.Next() {
		var c Column
		var null, key string
		var def sql.NullString
		if err := rows.Scan(&c.Name, &c.Type, &c.Charset, &c.Collation, &null, &def, &key); err != nil {
			return nil, err
		}
		if kind, _, _ := strings.Cut(c.Type, "("); c.Charset == "binary" && kind != "enum" && kind != "set" {
			// A binary string's type says so (VARBINARY, BLOB); an ENUM
			// or SET of the binary set keeps it (projections' schema.go).
			c.Charset, c.Collation = "", ""
		}
		c.Nullable, c.Key = null == "YES", key == "PRI"
		// MariaDB writes an explicit DEFAULT NULL as the text NULL.
		c.Default, c.HasDefault = def.String, def.Valid && !(c.Nullable && def.String == "NULL")
		out = append(out, c)
	}
	return out, rows.Err()
}

// Drifts compares the read table table's existing columns with the
// planned ones; an absent table (no existing columns) has none.
func Drifts(table string, planned, existing []Column) []Drift {
	if len(existing) == 0 {
		return nil
	}
	alter := "ALTER TABLE " + q(table) + " "
	have := map[string]Column{}
	for _, c := range existing {
		have[c.Name] = c
	}
	var out []Drift
	for _, p := range planned {
		e, ok := have[p.Name]
		if !ok {
			d := Drift{Column: p.Name, Planned: p.Definition(), Safe: !p.Key,
				Why: "the column is declared but the read table has none"}
			add := p
			if !p.Key && !p.HasDefault {
				// Rows already there have no value for it: NULL until a
				// backfill fills it, rather than a made-up 0 or ''.
				add.Nullable = true
				d.Why += "; rows already there hold NULL in it until backfilled (readside replay --backfill)"
			}
			d.Alter = alter + "ADD COLUMN " + q(p.Name) + " " + add.Definition()
			if p.Key {
				d.Why = "the column is a new part of the key: the primary key changes"
			}
			out = append(out, d)
			continue
		}
		why, safe := compare(p, e)
		if why == "" {
			continue
		}
		want := p
		if e.Nullable && !p.Nullable && !p.Key {
			// Keep a nullable column nullable: it may hold NULLs already.
			want.Nullable = true
		}
		out = append(out, Drift{Column: p.Name, Planned: p.Definition(), Existing: e.Definition(), Safe: safe, Why: why,
			Silent: roundsSilently(normType(e.Type), normType(p.Type)) || mergesSilently(p, e) || respelledSilently(e.Type, p.Type),
			Alter:  alter + "MODIFY COLUMN " + q(p.Name) + " " + want.Definition()})
	}
	for _, e := range existing {
		if slices.ContainsFunc(planned, func(p Column) bool { return p.Name == e.Name }) {
			continue
		}
		d := Drift{Column: e.Name, Existing: e.Definition(), Alter: alter + "DROP COLUMN " + q(e.Name)}
		switch {
		case e.Key:
			d.Why = "the column is no longer declared but is part of the read table's primary key"
		case e.Nullable || e.HasDefault:
			d.Harmless = true
			d.Why = "the column is no longer declared; rows still apply (it is nullable or has a default), drop it once nothing reads it"
		default:
			nullable := e
			nullable.Nullable = true
			d.Safe = true
			d.Alter = alter + "MODIFY COLUMN " + q(e.Name) + " " + nullable.Definition()
			d.Why = "the column is no longer declared but is NOT NULL without a default, so new rows fail (\"doesn't have a default value\"); making it nullable keeps its values, or drop it: " + alter + "DROP COLUMN " + q(e.Name)
		}
		out = append(out, d)
	}
	return out
}

// compare says how the existing column e differs from the planned p ("":
// not at all, or only in ways every planned value fits) and whether
// altering e to p keeps every stored value.
func compare(p, e Column) (string, bool) {
	var whys []string
	safe := true
	pt, et := normType(p.Type), normType(e.Type)
	kept, members := membersKept(e.Type, p.Type)
	if members {
		// Members are compared as written: normType's lower-casing
		// would hide a member whose case changed.
		pt, et = shownMembers(p.Type, p.Charset), shownMembers(e.Type, e.Charset)
	}
	if pt != et {
		w := kept || !members && widens(et, pt)
		if !w {
			safe = false
		}
		whys = append(whys, fmt.Sprintf("type %s on the sink, %s planned%s", e.Type, p.Type, map[bool]string{true: " (a widening)", false: " (narrower or a different type: values may not fit)"}[w]))
	}
	if p.Charset != "" && (!strings.EqualFold(p.Charset, e.Charset) || !strings.EqualFold(p.Collation, e.Collation)) {
		// utf8mb4 holds every character of every other set.
		ok := strings.EqualFold(p.Charset, e.Charset) || strings.EqualFold(p.Charset, "utf8mb4")
		safe = safe && ok
		have := strings.TrimSpace(e.Charset + " " + e.Collation)
		if have == "" {
			have = "none" // a type change from a non-string type
		}
		whys = append(whys, fmt.Sprintf("character set %s on the sink, %s %s planned", have, p.Charset, p.Collation))
	}
	if mergesSilently(p, e) {
		safe = false
		whys = append(whys, fmt.Sprintf("its collation decides which values are one group or one distinct value, and %s does not equal what %s does ('a' and 'A', 'ss' and 'ß', 'a' and 'a '): the counts, sums and groups already stored merged values the source now tells apart, or keep apart values it now merges, and cannot be split or joined in place", p.Collation, e.Collation))
	}
	if p.Nullable && !e.Nullable {
		whys = append(whys, "NOT NULL on the sink, nullable planned (NULL values would be refused)")
	}
	if len(whys) == 0 {
		return "", true
	}
	return strings.Join(whys, "; "), safe
}

// shownMembers is an ENUM or SET type t as information_schema shows it,
// in one spelling: the plan has the exact names (projections'
// resolveMembers) where information_schema (utf8mb3) shows a character
// outside the Basic Multilingual Plane as '?', and a plan's escapes may
// differ from the server's, so both sides are compared by their names,
// masked as the server masks them: of the binary set, every byte past
// ASCII is a '?'.
func shownMembers(t, charset string) string {
	kind, _, _ := strings.Cut(strings.TrimSpace(t), "(")
	names := sourcedb.ParseMembers(t)
	for i, n := range names {
		var shown strings.Builder
		for _, r := range n {
			switch {
			case charset == "binary" && r > 0x7F:
				shown.WriteString(strings.Repeat("?", utf8.RuneLen(r)))
			case r > 0xFFFF:
				shown.WriteRune('?')
			default:
				shown.WriteRune(r)
			}
		}
		names[i] = shown.String()
	}
	return sourcedb.MembersType(kind, names)
}

// mergesSilently: p groups values by its collation (Column.Groups) and
// e has another, so the stored groups or distinct values would be wrong
// without any error from the server.
func mergesSilently(p, e Column) bool {
	return p.Groups && p.Charset != "" && e.Collation != "" && !strings.EqualFold(p.Collation, e.Collation)
}

var (
	widthRe  = regexp.MustCompile(`^(tinyint|smallint|mediumint|int|bigint)\(\d+\)`)
	lengthRe = regexp.MustCompile(`^(varchar|char|varbinary|binary|datetime|timestamp|time|bit)\((\d+)\)$`)
	decRe    = regexp.MustCompile(`^decimal\((\d+),(\d+)\)( unsigned)?$`)
	enumRe   = regexp.MustCompile(`(?i)^(enum|set)\((.*)\)$`)
)

// normType lower-cases a column type and drops integer display widths,
// which MySQL 8 no longer writes and which bound nothing.
func normType(t string) string {
	t = strings.ToLower(strings.TrimSpace(t))
	return widthRe.ReplaceAllString(t, "$1")
}

var (
	intRank  = map[string]int{"tinyint": 1, "smallint": 2, "mediumint": 3, "int": 4, "bigint": 5}
	textRank = map[string]int{"tinytext": 1, "text": 2, "mediumtext": 3, "longtext": 4, "tinyblob": 1, "blob": 2, "mediumblob": 3, "longblob": 4}
)

// widens reports whether every value of type from (normalized) fits type
// to unchanged.
func widens(from, to string) bool {
	fi, fu := intKind(from)
	ti, tu := intKind(to)
	if fi > 0 && ti > 0 {
		// Same signedness and more bytes; unsigned to a strictly larger
		// signed type also keeps every value.
		return (fu == tu && ti >= fi) || (fu && !tu && ti > fi)
	}
	if fr, tr := textRank[from], textRank[to]; fr > 0 && tr > 0 {
		return strings.HasSuffix(from, "blob") == strings.HasSuffix(to, "blob") && tr >= fr
	}
	if fm, tm := lengthRe.FindStringSubmatch(from), lengthRe.FindStringSubmatch(to); fm != nil && tm != nil {
		fn, _ := strconv.Atoi(fm[2])
		tn, _ := strconv.Atoi(tm[2])
		return fm[1] == tm[1] && tn >= fn
	}
	if ff, tf, ok := fractions(from, to); ok {
		// DATETIME → DATETIME(6): more fractional second digits.
		return tf >= ff
	}
	if from == "float" && to == "double" {
		return true // every float32 is a double
	}
	if fi > 0 {
		// An integer into a DECIMAL with room for all its digits.
		if tm := decRe.FindStringSubmatch(to); tm != nil {
			tp, _ := strconv.Atoi(tm[1])
			ts, _ := strconv.Atoi(tm[2])
			return (tm[3] == "" || fu) && tp-ts >= intDigits[fi]
		}
	}
	if fm, tm := lengthRe.FindStringSubmatch(from), textRank[to]; fm != nil && tm > 0 {
		// A VARCHAR grown past what fits a row becomes a TEXT kind.
		return (fm[1] == "varchar" && !strings.HasSuffix(to, "blob") || fm[1] == "varbinary" && strings.HasSuffix(to, "blob")) && tm >= 2
	}
	if fm, tm := decRe.FindStringSubmatch(from), decRe.FindStringSubmatch(to); fm != nil && tm != nil {
		fp, _ := strconv.Atoi(fm[1])
		fs, _ := strconv.Atoi(fm[2])
		tp, _ := strconv.Atoi(tm[1])
		ts, _ := strconv.Atoi(tm[2])
		return fm[3] == tm[3] && ts >= fs && tp-ts >= fp-fs
	}
	return false
}

// membersKept reports, for two ENUM or SET types (members says both are,
// of one kind), whether to lists every member of from, spelled byte for
// byte alike, in the same relative order. ALTER TABLE converts a stored
// ENUM or SET value by its text, so such a change keeps every value
// (whatever the members' indexes become) and every order of stored
// values (ORDER BY sorts by index: a children array ordered by the
// column keeps its order). A member respelled (a case change is one under
// a _ci collation: 'a' becomes 'A'), dropped or moved before another is
// not kept.
func membersKept(from, to string) (kept, members bool) {
	fm, tm := enumRe.FindStringSubmatch(strings.TrimSpace(from)), enumRe.FindStringSubmatch(strings.TrimSpace(to))
	if fm == nil || tm == nil || !strings.EqualFold(fm[1], tm[1]) {
		return false, false
	}
	old, oerr := expr.EnumMembers(strings.TrimSpace(from))
	nw, nerr := expr.EnumMembers(strings.TrimSpace(to))
	if oerr != nil || nerr != nil {
		return false, true
	}
	i := 0
	for _, m := range nw {
		if i < len(old) && m == old[i] {
			i++
		}
	}
	return i == len(old), true
}

// respelledSilently reports whether an ENUM or SET member of type to is
// one of from spelled otherwise ('a' → 'A', 'x' → 'x '): a read column of
// type from under a _ci or PAD SPACE collation stores the new spelling as
// the old one, with no error.
func respelledSilently(from, to string) bool {
	old, oerr := expr.EnumMembers(strings.TrimSpace(from))
	nw, nerr := expr.EnumMembers(strings.TrimSpace(to))
	if oerr != nil || nerr != nil || !enumRe.MatchString(strings.TrimSpace(from)) || !enumRe.MatchString(strings.TrimSpace(to)) {
		return false
	}
	for _, m := range nw {
		if slices.Contains(old, m) {
			continue
		}
		if slices.ContainsFunc(old, func(o string) bool { return strings.EqualFold(strings.TrimRight(o, " "), strings.TrimRight(m, " ")) }) {
			return true
		}
	}
	return false
}

// intDigits are the decimal digits of each integer rank's largest value.
var intDigits = map[int]int{1: 3, 2: 5, 3: 8, 4: 10, 5: 20}

// fractions are the fractional second digits of temporal types from and
// to of one kind (DATETIME, TIMESTAMP or TIME; a bare name has none).
func fractions(from, to string) (f, t int, ok bool) {
	kind := func(typ string) (string, int, bool) {
		name, rest, _ := strings.Cut(typ, "(")
		if name != "datetime" && name != "timestamp" && name != "time" {
			return "", 0, false
		}
		n, _ := strconv.Atoi(strings.TrimSuffix(rest, ")"))
		return name, n, true
	}
	fk, f, fok := kind(from)
	tk, t, tok := kind(to)
	return f, t, fok && tok && fk == tk
}

// roundsSilently reports whether the server, even in strict mode, stores
// some value of type to in a column of type from as another value with at
// most a note: fewer decimals (a DECIMAL's scale, an integer for a
// fraction), fewer fractional second digits, a date for a datetime, a
// float32 for a double. A read table behind such a source change would
// hold wrong values and no refused row would ever say so.
func roundsSilently(from, to string) bool {
	fi, _ := intKind(from)
	ti, _ := intKind(to)
	fd, td := decRe.FindStringSubmatch(from), decRe.FindStringSubmatch(to)
	float := func(t string) bool {
		return t == "float" || t == "double" || strings.HasPrefix(t, "float ") || strings.HasPrefix(t, "double ")
	}
	switch {
	case fd != nil && td != nil:
		fs, _ := strconv.Atoi(fd[2])
		ts, _ := strconv.Atoi(td[2])
		return ts > fs
	case fd != nil || fi > 0:
		if td != nil {
			ts, _ := strconv.Atoi(td[2])
			return ts > 0
		}
		return float(to)
	case strings.HasPrefix(from, "float"):
		// A float32 holds integers up to 2^24 and about 7 digits.
		if td != nil {
			tp, _ := strconv.Atoi(td[1])
			return tp > 7
		}
		return strings.HasPrefix(to, "double") || ti >= intRank["int"]
	case strings.HasPrefix(from, "double"):
		if td != nil {
			tp, _ := strconv.Atoi(td[1])
			return tp > 15
		}
		return ti == intRank["bigint"]
	case from == "date":
		return strings.HasPrefix(to, "datetime") || strings.HasPrefix(to, "timestamp")
	}
	if ff, tf, ok := fractions(from, to); ok {
		return tf > ff
	}
	return false
}

// intKind is an integer type's rank (0: not an integer) and signedness.
func intKind(t string) (int, bool) {
	base, rest, _ := strings.Cut(t, " ")
	return intRank[base], strings.Contains(rest, "unsigned")
}

// Drifts compares p's read table and the state table of each of its
// joins, on every shard, with what the plan would create (sinks.DDL); each
// Drift names its shard when the sink has several.
func (s *Sharded) Drifts(ctx context.Context, p *projections.Projection, types projections.Types) ([]Drift, error) {
	var out []Drift
	for _, t := range plannedTables(p, types) {
		for i, sh := range s.Shards {
			existing, err := sh.ReadColumns(ctx, t.name)
			if err != nil {
				return nil, fmt.Errorf("shard %s: %w", sh.Range.Text, err)
			}
			for _, d := range Drifts(t.name, t.columns, existing) {
				d.Shard = i
				d.Table = t.name
				d.ReadColumn = d.Column
				if c, ok := t.read[d.Column]; ok {
					d.ReadColumn = c
				}
				if len(s.Shards) > 1 {
					d.Why = "shard " + sh.Range.Text + ": " + d.Why
				}
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// plannedTable is one sink table of a projection with its planned columns.
type plannedTable struct {
	name    string
	columns []Column          // as DDL creates them
	read    map[string]string // state column → the read column it copies
}

// plannedTables are p's read table, the state table of each join, and
// the state and link tables of each children entry.
func plannedTables(p *projections.Projection, types projections.Types) []plannedTable {
	if p.Aggregation != nil {
		return aggregateTables(p, types)
	}
	out := append([]plannedTable{{name: p.Table, columns: PlannedColumns(p, types)}}, plannedJoinTables(p, types)...)
	for i, c := range p.Children {
		out = append(out, plannedTable{name: c.StateTable(p), columns: PlannedChildStateColumns(p, i, types)},
			plannedTable{name: c.LinkTable(p), columns: PlannedChildLinkColumns(p, i, types)})
		for k, j := range c.Joins {
			out = append(out, plannedTable{name: c.JoinStateTable(p, j), columns: PlannedChildJoinColumns(p, i, k, types)})
		}
	}
	return out
}

// plannedJoinTables are the state tables of p's joins.
func plannedJoinTables(p *projections.Projection, types projections.Types) []plannedTable {
	var out []plannedTable
	for i, j := range p.Joins {
		t := plannedTable{name: j.StateTable(p), columns: PlannedStateColumns(p, i, types), read: map[string]string{}}
		for _, c := range j.Columns {
			t.read[stateCol(c.Name)] = c.Name
		}
		out = append(out, t)
	}
	return out
}

// PlannedStateColumns are the columns DDL(p, types) gives the state table
// of p.Joins[i]: the parent's key, the copied columns with their read
// columns' types, and the parent row's version.
func PlannedStateColumns(p *projections.Projection, i int, types projections.Types) []Column {
	j := p.Joins[i]
	var out []Column
	for _, on := range j.On {
		if i < len(types.JoinKey) {
			c := parseDef(stateKey(on.Parent), types.JoinKey[i][on.Parent])
			c.Key = true
			out = append(out, c)
		}
	}
	for _, c := range j.Columns {
		out = append(out, parseDef(stateCol(c.Name), types.Read[c.Name]))
	}
	return append(out, Column{Name: "_rs_version", Type: "bigint unsigned", Comment: stateVersionComment})
}
