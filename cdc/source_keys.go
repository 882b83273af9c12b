package cdc

// Tables keyed by source.keys instead of a primary key (legacy audit and
// log tables with only a UNIQUE NOT NULL index; Debezium's
// message.key.columns). The named columns then do everything the primary
// key does: record key, the row a version belongs to, partition, snapshot
// chunk order, and a change of them is a delete plus a create
// (row_events.go). That is only sound while they identify one row, so
// readside holds them to what a primary key guarantees and fails closed
// the moment it cannot:
//   - at check and start, information_schema must show every key column
//     NOT NULL and a UNIQUE index (the primary key counts) whose columns
//     are all key columns (checkTableKeys);
//   - every TABLE_MAP of the table must mark the key columns NOT NULL
//     (setKey: a MODIFY … NULL shows there in every binlog_row_metadata
//     mode);
//   - the unique indexes are followed through the DDL the binlog carries
//     (keyGuard): a row of the table written after the last covering
//     index was dropped stops the tailer, naming the table, the key and
//     the fix.
// When a table has a primary key and source.keys, source.keys wins, as
// message.key.columns does in Debezium: the user asked for that key, and
// it is held to the same checks, so it identifies rows as well as the
// primary key does.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/readside/readside/internal/sourcedb"
)

// keysDoc is where the operations guide explains tables without a primary key.
const keysDoc = `docs/operations.md, "Tables without a primary key"`

// setKey sets the columns that key t's events: the ones source.keys names
// (keyCols non-nil), else the primary key's (pk, column indexes). nullable
// says whether column i may hold NULL as the row's source describes it
// (the TABLE_MAP, or information_schema for a snapshot); nil when unknown.
func (t *table) setKey(pk []int, keyCols []string, nullable func(i int) bool) error {
	qualified := t.db + "." + t.name
	idx := pk
	if keyCols != nil {
		idx = nil
		for _, k := range keyCols {
			i := slices.IndexFunc(t.columns, func(c column) bool { return strings.EqualFold(c.name, k) })
			if i < 0 {
				return fmt.Errorf("table %s: source.keys.%s names column %s, which the table does not have (columns %s): a DDL dropped or renamed it? "+
					"Name the columns of a UNIQUE NOT NULL index in source.keys and re-snapshot the table (%s)", qualified, qualified, k, strings.Join(t.colNames, ", "), keysDoc)
			}
			if nullable != nil && nullable(i) {
				return fmt.Errorf("table %s: key column %s (source.keys.%s) is nullable now: rows with NULL there would share one key. "+
					"Make it NOT NULL again (ALTER TABLE %s MODIFY %s … NOT NULL) or key the table by other columns, then re-snapshot it (%s)",
					qualified, t.columns[i].name, qualified, qualifiedIdent(qualified), quoteIdent(t.columns[i].name), keysDoc)
			}
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return fmt.Errorf("table %s has no primary key and no source.keys entry: readside keys every event by one. "+
			"Add source.keys: {%s: [the columns of a UNIQUE NOT NULL index]} or a primary key; `readside check` lists the table's unique indexes", qualified, qualified)
	}
	for _, i := range idx {
		if t.columns[i].excluded {
			return fmt.Errorf("table %s: column %s is excluded (source.exclude_columns) but part of the key; keep it", qualified, t.columns[i].name)
		}
	}
	t.pk = idx
	t.nullable = nullable
	return nil
}

// uniqueIndex is one UNIQUE index (or the primary key) of a source table.
type uniqueIndex struct {
	name    string
	cols    []string
	notNull bool // every column NOT NULL
}

func (ix uniqueIndex) String() string {
	null := "all NOT NULL"
	if !ix.notNull {
		null = "nullable"
	}
	return fmt.Sprintf("%s (%s; %s)", ix.name, strings.Join(ix.cols, ", "), null)
}

// within reports whether every column of the index is one of cols: then
// cols are unique (the index holds no NULL there when cols are NOT NULL).
func (ix uniqueIndex) within(cols []string) bool {
	if len(ix.cols) == 0 {
		return false
	}
	for _, c := range ix.cols {
		if !slices.ContainsFunc(cols, func(k string) bool { return strings.EqualFold(k, c) }) {
			return false
		}
	}
	return true
}

// tableKeyInfo is what information_schema says of a table's keys.
type tableKeyInfo struct {
	exists   bool
	columns  []string
	nullable map[string]bool // lower-case column name
	pk       []string
	unique   []uniqueIndex // the primary key included, named PRIMARY
}

// keyInfo reads a table's columns, their nullability and its unique
// indexes. Indexes on an expression (MySQL functional key parts) are left
// out: they do not make columns unique.
func (s *sourceDB) keyInfo(ctx context.Context, db, name string) (tableKeyInfo, error) {
	var ti tableKeyInfo
	rows, err := s.db.QueryContext(ctx, `SELECT COLUMN_NAME, IS_NULLABLE FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, db, name)
	if err != nil {
		return ti, fmt.Errorf("reading the columns of %s.%s: %w", db, name, err)
	}
	ti.nullable = map[string]bool{}
	for rows.Next() {
		var c, null string
		if err := rows.Scan(&c, &null); err != nil {
			rows.Close()
			return ti, err
		}
		ti.columns = append(ti.columns, c)
		ti.nullable[strings.ToLower(c)] = null == "YES"
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return ti, err
	}
	ti.exists = len(ti.columns) > 0
	if !ti.exists {
		return ti, nil
	}
	rows, err = s.db.QueryContext(ctx, `SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND NON_UNIQUE = 0`+sourcedb.NotRowEnd("STATISTICS")+` ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX`, db, name)
	if err != nil {
		return ti, fmt.Errorf("reading the unique indexes of %s.%s: %w", db, name, err)
	}
	defer rows.Close()
	skip := map[string]bool{}
	for rows.Next() {
		var ix string
		var col *string
		if err := rows.Scan(&ix, &col); err != nil {
			return ti, err
		}
		if col == nil {
			skip[ix] = true
			continue
		}
		if n := len(ti.unique); n == 0 || ti.unique[n-1].name != ix {
			ti.unique = append(ti.unique, uniqueIndex{name: ix, notNull: true})
		}
		u := &ti.unique[len(ti.unique)-1]
		u.cols = append(u.cols, *col)
		u.notNull = u.notNull && !ti.nullable[strings.ToLower(*col)]
		if ix == "PRIMARY" {
			ti.pk = append(ti.pk, *col)
		}
	}
	ti.unique = slices.DeleteFunc(ti.unique, func(u uniqueIndex) bool { return skip[u.name] })
	return ti, rows.Err()
}

// keyProblem is a captured table readside cannot key, and the fix.
type keyProblem struct{ what, fix string }

func (p keyProblem) Error() string { return p.what + ": " + p.fix }

// checkTableKeys checks that a table can be keyed: by source.keys
// (keyCols non-nil: existing, NOT NULL columns that contain a unique
// index) or else by its primary key.
func checkTableKeys(table string, ti tableKeyInfo, keyCols []string) []keyProblem {
	if keyCols == nil {
		if len(ti.pk) > 0 {
			return nil
		}
		return []keyProblem{noKeyProblem(table, ti)}
	}
	var out []keyProblem
	key := "source.keys." + table
	usable := true
	for _, k := range keyCols {
		null, ok := ti.nullable[strings.ToLower(k)]
		switch {
		case !ok:
			usable = false
			out = append(out, keyProblem{fmt.Sprintf("%s names column %s, which %s does not have (columns %s); %s", key, k, table, strings.Join(ti.columns, ", "), describeUnique(ti.unique)),
				"name the columns of a UNIQUE NOT NULL index of " + table + keyedBy(table, ti)})
		case null:
			usable = false
			out = append(out, keyProblem{fmt.Sprintf("%s names column %s, which is nullable: rows with NULL there would share one key; %s", key, k, describeUnique(ti.unique)),
				fmt.Sprintf("make it NOT NULL (ALTER TABLE %s MODIFY %s … NOT NULL), or name the columns of a UNIQUE NOT NULL index%s", qualifiedIdent(table), quoteIdent(k), keyedBy(table, ti))})
		}
	}
	if !usable {
		return out
	}
	if !slices.ContainsFunc(ti.unique, func(u uniqueIndex) bool { return u.within(keyCols) }) {
		what := fmt.Sprintf("%s: columns (%s) of %s contain no UNIQUE index, so two rows may share a key; %s", key, strings.Join(keyCols, ", "), table, describeUnique(ti.unique))
		out = append(out, keyProblem{what, fmt.Sprintf("add one (ALTER TABLE %s ADD UNIQUE (%s)), or name the columns of an existing one", qualifiedIdent(table), identList(keyCols))})
	}
	return out
}

// noKeyProblem is a table with neither a primary key nor source.keys: the
// message names its unique indexes and the exact fix.
func noKeyProblem(table string, ti tableKeyInfo) keyProblem {
	what := fmt.Sprintf("captured table %s has no primary key and no source.keys entry: readside keys every event by one; %s", table, describeUnique(ti.unique))
	for _, u := range ti.unique {
		if u.notNull {
			return keyProblem{what, fmt.Sprintf("add source.keys: {%s: [%s]} to the config (or a primary key: ALTER TABLE %s ADD PRIMARY KEY (%s))",
				table, strings.Join(u.cols, ", "), qualifiedIdent(table), identList(u.cols))}
		}
	}
	if len(ti.unique) > 0 {
		u := ti.unique[0]
		return keyProblem{what, fmt.Sprintf("make the columns of a unique index NOT NULL and add it to source.keys (e.g. ALTER TABLE %s MODIFY … NOT NULL for %s, then source.keys: {%s: [%s]}), or add a primary key (ALTER TABLE %s ADD PRIMARY KEY (…))",
			qualifiedIdent(table), strings.Join(u.cols, ", "), table, strings.Join(u.cols, ", "), qualifiedIdent(table))}
	}
	return keyProblem{what, fmt.Sprintf("add a primary key (ALTER TABLE %s ADD PRIMARY KEY (…)) or a UNIQUE index on NOT NULL columns named in source.keys, or remove the table from source.tables", qualifiedIdent(table))}
}

// keyedBy suggests the fix that needs no schema change: dropping the
// entry of a table its primary key already keys, else the source.keys
// entry of its first unique index on NOT NULL columns, if it has one.
func keyedBy(table string, ti tableKeyInfo) string {
	if len(ti.pk) > 0 {
		return fmt.Sprintf(", or remove source.keys.%s: its primary key (%s) keys it", table, strings.Join(ti.pk, ", "))
	}
	for _, u := range ti.unique {
		if u.notNull {
			return fmt.Sprintf(" (source.keys: {%s: [%s]})", table, strings.Join(u.cols, ", "))
		}
	}
	return ""
}

func describeUnique(us []uniqueIndex) string {
	if len(us) == 0 {
		return "it has no unique index"
	}
	parts := make([]string, len(us))
	for i, u := range us {
		parts[i] = u.String()
	}
	return "its unique indexes: " + strings.Join(parts, ", ")
}

func qualifiedIdent(table string) string {
	db, name, _ := strings.Cut(table, ".")
	return quoteIdent(db) + "." + quoteIdent(name)
}

func identList(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = quoteIdent(c)
	}
	return strings.Join(q, ", ")
}

// keyGuard follows the unique indexes of the tables keyed by source.keys
// (and of any table of their databases a DDL creates, which a RENAME may
// swap in: gh-ost, pt-osc) through the DDL in the binlog, so that a row
// of a keyed table written while no unique index covers its key stops
// the tailer. It starts from information_schema when a stream starts.
type keyGuard struct {
	keys    map[string][]string // db.table -> source.keys
	dbs     map[string]bool     // databases of keyed tables
	indexes map[string][]uniqueIndex
	// lost is, per table, the statement after which readside no longer
	// knows a covering index (for the message); set only when it is
	// uncovered.
	lost   map[string]string
	parser *parser.Parser
}

func newKeyGuard(keys map[string][]string) *keyGuard {
	g := &keyGuard{keys: keys, dbs: map[string]bool{}, indexes: map[string][]uniqueIndex{}, lost: map[string]string{}}
	for t := range keys {
		db, _, _ := strings.Cut(t, ".")
		g.dbs[db] = true
	}
	return g
}

// load reads the keyed tables' unique indexes from the source.
func (g *keyGuard) load(ctx context.Context, src *sourceDB) error {
	for t := range g.keys {
		db, name, _ := strings.Cut(t, ".")
		ti, err := src.keyInfo(ctx, db, name)
		if err != nil {
			return err
		}
		if ti.exists {
			g.set(t, "", ti.unique)
			if _, lost := g.lost[t]; lost {
				g.lost[t] = "the schema information_schema showed when the stream started"
			}
		} else {
			g.lost[t] = "the table did not exist when the stream started"
		}
	}
	return nil
}

// check returns the error of a row of table, nil when its key is covered
// by a unique index as of the stream's position.
func (g *keyGuard) check(table string) error {
	cols, ok := g.keys[table]
	if !ok {
		return nil
	}
	if ix, known := g.indexes[table]; known && slices.ContainsFunc(ix, func(u uniqueIndex) bool { return u.within(cols) }) {
		return nil
	}
	why := g.lost[table]
	return fmt.Errorf("table %s is keyed by source.keys (%s), but no UNIQUE index covers those columns any more (after %s): its rows may no longer be told apart by them. "+
		"Fix: add a UNIQUE index on them again (ALTER TABLE %s ADD UNIQUE (%s)) or change source.keys, then restart readside with a new checkpoint and snapshot the table (%s)",
		table, strings.Join(cols, ", "), why, qualifiedIdent(table), identList(cols), keysDoc)
}

// touches reports whether a statement's tokens may concern a keyed
// database, cheaply, before parsing.
func (g *keyGuard) touches(defaultDB string, toks []string) bool {
	if len(toks) < 2 {
		return false
	}
	switch strings.ToLower(toks[0]) {
	case "create", "alter", "drop", "rename":
	default:
		return false
	}
	if g.dbs[defaultDB] {
		return true
	}
	for _, t := range toks[2:] {
		if db, _, ok := strings.Cut(t, "."); ok && g.dbs[db] {
			return true
		}
	}
	return false
}

// apply follows one DDL statement. A statement that may touch a keyed
// database but does not parse leaves every keyed table it names
// uncovered: readside cannot tell what it did to their indexes.
func (g *keyGuard) apply(defaultDB, sql string) {
	toks := tokenize(sql)
	if !g.touches(defaultDB, toks) {
		return
	}
	if g.parser == nil {
		g.parser = parser.New()
	}
	stmts, _, err := g.parser.Parse(sql, "", "")
	if err != nil {
		// The parser knows only a few character sets and collations
		// (utf8mb4, latin1, gbk…): a column added in cp1251 or sjis is as
		// good as one in utf8mb4 for what indexes a statement leaves.
		stmts, _, err = g.parser.Parse(withParserCharsets(sql), "", "")
	}
	if err != nil {
		if alterKeepsIndexes(toks) {
			return // MariaDB syntax the parser lacks (a UUID column, WITH SYSTEM VERSIONING) that drops nothing
		}
		g.forgetNamed(defaultDB, sql, toks)
		return
	}
	for _, stmt := range stmts {
		switch st := stmt.(type) {
		case *ast.CreateTableStmt:
			g.createTable(defaultDB, sql, st)
		case *ast.AlterTableStmt:
			g.alterTable(defaultDB, sql, st)
		case *ast.CreateIndexStmt:
			t := keyedName(defaultDB, st.Table)
			if ix, ok := g.indexes[t]; ok && st.KeyType == ast.IndexKeyTypeUnique {
				g.set(t, sql, addIndex(slices.Clone(ix), st.IndexName, st.IndexPartSpecifications))
			}
		case *ast.DropIndexStmt:
			t := keyedName(defaultDB, st.Table)
			if ix, ok := g.indexes[t]; ok {
				g.set(t, sql, dropIndex(slices.Clone(ix), st.IndexName))
			}
		case *ast.RenameTableStmt:
			g.renameTables(defaultDB, sql, st)
		case *ast.DropTableStmt:
			for _, tn := range st.Tables {
				t := keyedName(defaultDB, tn)
				delete(g.indexes, t)
				g.forget(t, sql)
			}
		case *ast.DropDatabaseStmt:
			for t := range g.indexes {
				if strings.HasPrefix(t, st.Name.O+".") {
					delete(g.indexes, t)
					g.forget(t, sql)
				}
			}
		}
	}
}

// alterKeepsIndexes reports whether a statement is an ALTER TABLE that
// cannot take a unique index away: only DROP (an index, a primary key, a
// column), CHANGE and RENAME (a column or the table) can, and a MODIFY
// that makes a key column nullable shows in the next TABLE_MAP. Indexes
// it may add are not learned: a table it covers stays covered, an
// uncovered one stays uncovered.
func alterKeepsIndexes(toks []string) bool {
	i := 1
	for i < len(toks) && (strings.EqualFold(toks[i], "online") || strings.EqualFold(toks[i], "ignore")) {
		i++
	}
	if !strings.EqualFold(toks[0], "alter") || i >= len(toks) || !strings.EqualFold(toks[i], "table") {
		return false
	}
	return !slices.ContainsFunc(toks, func(t string) bool {
		return strings.EqualFold(t, "drop") || strings.EqualFold(t, "change") || strings.EqualFold(t, "rename")
	})
}

// withParserCharsets returns sql with every character set named after
// CHARACTER SET or CHARSET replaced by utf8mb4 and every collation named
// after COLLATE by utf8mb4_bin, outside strings, identifiers and comments
// (a column's character set has no bearing on the indexes a statement
// leaves, and the parser refuses the ones it does not know).
func withParserCharsets(sql string) string {
	var out strings.Builder
	prev := "" // the last two words outside quotes, lower-cased
	prev2 := ""
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '`' || c == '\'' || c == '"':
			j := i + 1
			for j < len(sql) && sql[j] != c {
				if sql[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j < len(sql) {
				j++
			}
			word := sql[i:j]
			if c != '`' && (prev == "charset" || prev == "set" && prev2 == "character" || prev == "collate") {
				word = parserCharsetName(prev) // a quoted name: CHARACTER SET 'cp1251'
			}
			out.WriteString(word)
			prev, prev2 = "", prev
			i = j
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				out.WriteString(sql[i:])
				return out.String()
			}
			out.WriteString(sql[i : i+end+4])
			i += end + 4
		case c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			j := i
			for j < len(sql) && (sql[j] == '_' || sql[j] == '$' || sql[j] >= '0' && sql[j] <= '9' || sql[j] >= 'a' && sql[j] <= 'z' || sql[j] >= 'A' && sql[j] <= 'Z' || sql[j] >= 0x80) {
				j++
			}
			word := sql[i:j]
			if prev == "charset" || prev == "set" && prev2 == "character" || prev == "collate" {
				out.WriteString(parserCharsetName(prev))
			} else {
				out.WriteString(word)
			}
			prev, prev2 = strings.ToLower(word), prev
			i = j
		default:
			if c != '=' && c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				prev, prev2 = "", "" // punctuation ends a clause; '=' and space do not (CHARSET = x)
			}
			out.WriteByte(c)
			i++
		}
	}
	return out.String()
}

func parserCharsetName(keyword string) string {
	if keyword == "collate" {
		return "utf8mb4_bin"
	}
	return "utf8mb4"
}

// keyedName is tn as source.keys names tables: db.table, in the
// statement's default database if it names none.
func keyedName(defaultDB string, tn *ast.TableName) string {
	db := tn.Schema.O
	if db == "" {
		db = defaultDB
	}
	return db + "." + tn.Name.O
}

// forgetNamed forgets the indexes of every keyed table an unparsable
// statement's tokens name.
func (g *keyGuard) forgetNamed(defaultDB, sql string, toks []string) {
	for t := range g.keys {
		db, name, _ := strings.Cut(t, ".")
		for _, tok := range toks {
			if tok == t || tok == name && db == defaultDB {
				g.forget(t, sql)
			}
		}
	}
}

// createTable follows CREATE TABLE: the indexes it declares, or those of
// the table it copies (LIKE).
func (g *keyGuard) createTable(defaultDB, sql string, st *ast.CreateTableStmt) {
	t := keyedName(defaultDB, st.Table)
	if !g.tracks(t) || st.TemporaryKeyword != ast.TemporaryNone {
		return
	}
	if _, exists := g.indexes[t]; exists && st.IfNotExists {
		return
	}
	if st.ReferTable != nil {
		if ix, ok := g.indexes[keyedName(defaultDB, st.ReferTable)]; ok {
			g.set(t, sql, slices.Clone(ix))
		} else {
			g.forget(t, sql)
		}
		return
	}
	var ix []uniqueIndex
	for _, cd := range st.Cols {
		ix = addColumnIndexes(ix, cd)
	}
	for _, c := range st.Constraints {
		ix = addConstraint(ix, c)
	}
	g.set(t, sql, ix)
}

// alterTable follows ALTER TABLE's clauses in order on a table whose
// indexes are known; an unknown table stays unknown.
func (g *keyGuard) alterTable(defaultDB, sql string, st *ast.AlterTableStmt) {
	t := keyedName(defaultDB, st.Table)
	if !g.tracks(t) {
		return
	}
	ix, known := g.indexes[t]
	if !known {
		return // stays unknown
	}
	ix = slices.Clone(ix)
	for _, sp := range st.Specs {
		switch sp.Tp {
		case ast.AlterTableAddConstraint:
			ix = addConstraint(ix, sp.Constraint)
		case ast.AlterTableAddColumns:
			for _, cd := range sp.NewColumns {
				ix = addColumnIndexes(ix, cd)
			}
		case ast.AlterTableDropIndex:
			ix = dropIndex(ix, sp.Name)
		case ast.AlterTableDropPrimaryKey:
			ix = dropIndex(ix, "PRIMARY")
		case ast.AlterTableRenameIndex:
			for i := range ix {
				if strings.EqualFold(ix[i].name, sp.FromKey.O) {
					ix[i].name = sp.ToKey.O
				}
			}
		case ast.AlterTableDropColumn:
			ix = dropColumn(ix, sp.OldColumnName.Name.O)
		case ast.AlterTableChangeColumn:
			ix = addColumnIndexes(ix, sp.NewColumns[0])
			ix = renameColumn(ix, sp.OldColumnName.Name.O, sp.NewColumns[0].Name.Name.O)
		case ast.AlterTableRenameColumn:
			ix = renameColumn(ix, sp.OldColumnName.Name.O, sp.NewColumnName.Name.O)
		case ast.AlterTableModifyColumn:
			ix = addColumnIndexes(ix, sp.NewColumns[0])
		case ast.AlterTableRenameTable:
			delete(g.indexes, t)
			g.forget(t, sql)
			t = keyedName(defaultDB, sp.NewTable)
		}
	}
	if g.tracks(t) {
		g.set(t, sql, ix)
	}
}

// renameTables follows RENAME TABLE. All pairs move at once: t TO old,
// new TO t swaps.
func (g *keyGuard) renameTables(defaultDB, sql string, st *ast.RenameTableStmt) {
	moved := map[string][]uniqueIndex{}
	known := map[string]bool{}
	for _, tt := range st.TableToTables {
		from := keyedName(defaultDB, tt.OldTable)
		if ix, ok := g.indexes[from]; ok {
			to := keyedName(defaultDB, tt.NewTable)
			moved[to], known[to] = ix, true
		}
		delete(g.indexes, from)
		g.forget(from, sql)
	}
	for _, tt := range st.TableToTables {
		to := keyedName(defaultDB, tt.NewTable)
		if !g.tracks(to) {
			continue
		}
		if known[to] {
			g.set(to, sql, moved[to])
		} else {
			g.forget(to, sql)
		}
	}
}

// tracks reports whether t is in a keyed database.
func (g *keyGuard) tracks(t string) bool {
	db, _, _ := strings.Cut(t, ".")
	return g.dbs[db]
}

// set records t's unique indexes after statement sql.
func (g *keyGuard) set(t, sql string, ix []uniqueIndex) {
	g.indexes[t] = ix
	delete(g.lost, t)
	if cols, keyed := g.keys[t]; keyed && !slices.ContainsFunc(ix, func(u uniqueIndex) bool { return u.within(cols) }) {
		g.lost[t] = fmt.Sprintf("%q", sql)
	}
}

// forget makes t's indexes unknown since sql (a keyed table's rows then
// stop the tailer until a DDL gives it a covering index).
func (g *keyGuard) forget(t, sql string) {
	delete(g.indexes, t)
	if _, keyed := g.keys[t]; keyed {
		g.lost[t] = fmt.Sprintf("%q", sql)
	}
}

// addColumnIndexes adds what a column definition's PRIMARY KEY or UNIQUE
// option declares.
func addColumnIndexes(ix []uniqueIndex, cd *ast.ColumnDef) []uniqueIndex {
	for _, o := range cd.Options {
		switch o.Tp {
		case ast.ColumnOptionPrimaryKey:
			ix = append(dropIndex(ix, "PRIMARY"), uniqueIndex{name: "PRIMARY", cols: []string{cd.Name.Name.O}})
		case ast.ColumnOptionUniqKey:
			ix = append(ix, uniqueIndex{name: freeIndexName(ix, cd.Name.Name.O), cols: []string{cd.Name.Name.O}})
		}
	}
	return ix
}

func addConstraint(ix []uniqueIndex, c *ast.Constraint) []uniqueIndex {
	switch c.Tp {
	case ast.ConstraintPrimaryKey:
		return addIndex(dropIndex(ix, "PRIMARY"), "PRIMARY", c.Keys)
	case ast.ConstraintUniq, ast.ConstraintUniqKey, ast.ConstraintUniqIndex:
		return addIndex(ix, c.Name, c.Keys)
	}
	return ix
}

// addIndex adds a unique index, named as the server names it when the
// statement does not (its first column, then _2, _3…). An index with an
// expression part makes no column unique and is left out.
func addIndex(ix []uniqueIndex, name string, parts []*ast.IndexPartSpecification) []uniqueIndex {
	var cols []string
	for _, p := range parts {
		if p.Column == nil {
			return ix
		}
		cols = append(cols, p.Column.Name.O)
	}
	if len(cols) == 0 {
		return ix
	}
	if name == "" {
		name = freeIndexName(ix, cols[0])
	}
	return append(ix, uniqueIndex{name: name, cols: cols})
}

func freeIndexName(ix []uniqueIndex, base string) string {
	taken := func(n string) bool {
		return slices.ContainsFunc(ix, func(u uniqueIndex) bool { return strings.EqualFold(u.name, n) })
	}
	name := base
	for i := 2; taken(name); i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	return name
}

func dropIndex(ix []uniqueIndex, name string) []uniqueIndex {
	return slices.DeleteFunc(ix, func(u uniqueIndex) bool { return strings.EqualFold(u.name, name) })
}

// renameColumn follows a column rename (CHANGE or RENAME COLUMN) into the
// indexes that hold it.
func renameColumn(ix []uniqueIndex, from, to string) []uniqueIndex {
	for i := range ix {
		ix[i].cols = slices.Clone(ix[i].cols)
		for j, c := range ix[i].cols {
			if strings.EqualFold(c, from) {
				ix[i].cols[j] = to
			}
		}
	}
	return ix
}

// dropColumn removes a dropped column from the indexes, as the server
// does, and an index left without columns.
func dropColumn(ix []uniqueIndex, col string) []uniqueIndex {
	for i := range ix {
		ix[i].cols = slices.DeleteFunc(slices.Clone(ix[i].cols), func(c string) bool { return strings.EqualFold(c, col) })
	}
	return slices.DeleteFunc(ix, func(u uniqueIndex) bool { return len(u.cols) == 0 })
}
