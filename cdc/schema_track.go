package cdc

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // literal values in parsed DDL
)

// Schema history: when the source does not log column names
// (binlog_row_metadata is not FULL: MariaDB's default NO_LOG, MySQL 5.7, or
// MINIMAL), a TABLE_MAP event says only how many columns a row has and
// their binlog types. The names, primary key, ENUM/SET members and
// signedness then come from readside's own copy of the schema as of the
// event's position: an information_schema snapshot of every table in the
// captured databases, taken where the stream starts, with every DDL from
// the binlog's QUERY events applied in order. The copy is persisted in the
// schema history topic in the same Kafka transaction as the checkpoint
// (schema_history.go), so a restart resumes with the schema of its
// position. Every TABLE_MAP is checked against the copy (column count and
// each column's binlog type); a DDL the tracker cannot follow stops the
// tailer rather than risk decoding rows under the wrong names.

// colDef is one tracked column, in information_schema's terms.
type colDef struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"` // DATA_TYPE, lower case: "int", "varchar", "longblob"...
	Unsigned bool     `json:"unsigned,omitempty"`
	Charset  string   `json:"charset,omitempty"` // text types: their character set ("binary" for binary strings)
	Prec     int64    `json:"prec,omitempty"`    // DECIMAL precision, BIT width
	Scale    int64    `json:"scale,omitempty"`   // DECIMAL scale
	FSP      int64    `json:"fsp,omitempty"`     // fractional seconds of DATETIME/TIMESTAMP/TIME
	Length   int64    `json:"length,omitempty"`  // CHAR/BINARY length
	Members  []string `json:"members,omitempty"` // ENUM/SET
}

// tableDef is one tracked table. Unknown is set (and the rest empty) when
// a DDL on it could not be followed: only an error if readside ever needs
// the table's shape.
type tableDef struct {
	Columns []colDef `json:"columns,omitempty"`
	PK      []string `json:"pk,omitempty"`
	Charset string   `json:"charset,omitempty"` // default for new text columns
	Unknown string   `json:"unknown,omitempty"` // the statement that made the shape unknown
}

func (d *tableDef) col(name string) int {
	return slices.IndexFunc(d.Columns, func(c colDef) bool { return strings.EqualFold(c.Name, name) })
}

func (d *tableDef) clone() *tableDef {
	c := *d
	c.Columns = slices.Clone(d.Columns)
	c.PK = slices.Clone(d.PK)
	return &c
}

// schemaTracker holds the tracked schema of the captured databases.
type schemaTracker struct {
	flavor     string
	dbs        map[string]bool      // tracked databases (those with captured tables)
	tables     map[string]*tableDef // "db\x00table"
	dbCharset  map[string]string    // default charset per database
	server     string               // the server's default charset
	collations map[string]string    // collation name -> charset
	parser     *parser.Parser
}

func newSchemaTracker(flavor string, dbs []string) *schemaTracker {
	tr := &schemaTracker{flavor: flavor, dbs: map[string]bool{}, tables: map[string]*tableDef{},
		dbCharset: map[string]string{}, collations: map[string]string{}, parser: parser.New()}
	for _, db := range dbs {
		tr.dbs[db] = true
	}
	return tr
}

func tableKey(db, name string) string { return db + "\x00" + name }

// def is the tracked shape of db.name, nil when not tracked.
func (tr *schemaTracker) def(db, name string) *tableDef { return tr.tables[tableKey(db, name)] }

// ddlError is a DDL on a tracked database the tracker cannot follow.
func ddlError(sql string, why error) error {
	return fmt.Errorf("cannot follow DDL %q on a captured database: %v. readside's schema history would no longer match the binlog. "+
		"Fix: set binlog_row_metadata=FULL on the source (the binlog then names every column), or re-snapshot: stop readside, "+
		"delete this tailer's checkpoint and schema history (docs/operations.md, \"schema history\") and start again", sql, why)
}

// apply follows one QUERY event. It returns the keys of the tables (and,
// as "db\x00", databases) whose tracked state changed. Statements that
// cannot change a tracked table are ignored.
func (tr *schemaTracker) apply(defaultDB, sql string) (changed []string, err error) {
	toks := tokenize(sql)
	if len(toks) < 2 {
		return nil, nil
	}
	first := strings.ToLower(toks[0])
	switch first {
	case "create", "alter", "drop", "rename":
	default:
		return nil, nil
	}
	stmts, _, perr := tr.parser.Parse(sql, "", "")
	if perr != nil {
		if tr.mayTouch(defaultDB, toks) {
			return nil, ddlError(sql, fmt.Errorf("the DDL parser does not understand it (%v)", perr))
		}
		return nil, nil
	}
	for _, stmt := range stmts {
		switch st := stmt.(type) {
		case *ast.CreateTableStmt:
			changed, err = tr.applyCreateTable(defaultDB, sql, st, changed)
		case *ast.AlterTableStmt:
			changed, err = tr.applyAlterTable(defaultDB, sql, st, changed)
		case *ast.RenameTableStmt:
			changed = tr.applyRenameTable(defaultDB, sql, st, changed)
		case *ast.DropTableStmt:
			if st.IsView {
				continue
			}
			for _, tn := range st.Tables {
				db, name := qualify(defaultDB, tn)
				if tr.dbs[db] {
					delete(tr.tables, tableKey(db, name))
					changed = append(changed, tableKey(db, name))
				}
			}
		case *ast.DropDatabaseStmt:
			changed = tr.applyDropDatabase(st.Name.O, changed)
		case *ast.CreateDatabaseStmt:
			changed = tr.applyDatabaseOptions(st.Name.O, st.Options, changed)
		case *ast.AlterDatabaseStmt:
			db := st.Name.O
			if db == "" {
				db = defaultDB
			}
			changed = tr.applyDatabaseOptions(db, st.Options, changed)
		}
		if err != nil {
			return nil, err
		}
	}
	return changed, nil
}

// qualify names tn's database, the statement's default one if it names
// none.
func qualify(defaultDB string, tn *ast.TableName) (db, name string) {
	db = tn.Schema.O
	if db == "" {
		db = defaultDB
	}
	return db, tn.Name.O
}

// applyCreateTable follows CREATE TABLE. A copy (LIKE) of an untracked
// table or a table created from a SELECT is unknown.
func (tr *schemaTracker) applyCreateTable(defaultDB, sql string, st *ast.CreateTableStmt, changed []string) ([]string, error) {
	db, name := qualify(defaultDB, st.Table)
	if !tr.dbs[db] || st.TemporaryKeyword != ast.TemporaryNone {
		return changed, nil
	}
	key := tableKey(db, name)
	if tr.tables[key] != nil && st.IfNotExists {
		return changed, nil
	}
	var def *tableDef
	switch {
	case st.ReferTable != nil:
		src := tr.def(qualify(defaultDB, st.ReferTable))
		if src == nil {
			def = &tableDef{Unknown: sql}
		} else {
			def = src.clone()
		}
	case st.Select != nil:
		def = &tableDef{Unknown: sql}
	default:
		var err error
		if def, err = tr.createDef(db, st); err != nil {
			return nil, ddlError(sql, err)
		}
	}
	tr.tables[key] = def
	return append(changed, key), nil
}

// applyAlterTable follows ALTER TABLE on a copy of the table's definition.
func (tr *schemaTracker) applyAlterTable(defaultDB, sql string, st *ast.AlterTableStmt, changed []string) ([]string, error) {
	db, name := qualify(defaultDB, st.Table)
	if !tr.dbs[db] {
		return changed, nil
	}
	key := tableKey(db, name)
	def := tr.tables[key]
	if def == nil || def.Unknown != "" {
		// Not tracked (created before the snapshot in another
		// database, or already unknown): it stays unknown.
		tr.tables[key] = &tableDef{Unknown: sql}
		return append(changed, key), nil
	}
	def = def.clone()
	newKey, err := tr.alter(db, def, st.Specs)
	if err != nil {
		return nil, ddlError(sql, err)
	}
	if newKey != "" && newKey != key {
		delete(tr.tables, key)
		changed = append(changed, key)
		key = newKey
	}
	tr.tables[key] = def
	return append(changed, key), nil
}

// applyRenameTable follows RENAME TABLE: a table renamed out of a
// captured database is dropped, one renamed into it from elsewhere is
// unknown.
func (tr *schemaTracker) applyRenameTable(defaultDB, sql string, st *ast.RenameTableStmt, changed []string) []string {
	for _, tt := range st.TableToTables {
		odb, oname := qualify(defaultDB, tt.OldTable)
		ndb, nname := qualify(defaultDB, tt.NewTable)
		okey, nkey := tableKey(odb, oname), tableKey(ndb, nname)
		def := tr.tables[okey]
		if tr.dbs[odb] {
			delete(tr.tables, okey)
			changed = append(changed, okey)
		}
		if tr.dbs[ndb] {
			if def == nil {
				def = &tableDef{Unknown: sql}
			}
			tr.tables[nkey] = def
			changed = append(changed, nkey)
		}
	}
	return changed
}

// applyDropDatabase follows DROP DATABASE: its tables go.
func (tr *schemaTracker) applyDropDatabase(db string, changed []string) []string {
	if !tr.dbs[db] {
		return changed
	}
	for key := range tr.tables {
		if strings.HasPrefix(key, db+"\x00") {
			delete(tr.tables, key)
			changed = append(changed, key)
		}
	}
	return changed
}

// applyDatabaseOptions follows CREATE and ALTER DATABASE: the database's
// default charset, which new text columns take.
func (tr *schemaTracker) applyDatabaseOptions(db string, opts []*ast.DatabaseOption, changed []string) []string {
	if !tr.dbs[db] {
		return changed
	}
	for _, o := range opts {
		switch o.Tp {
		case ast.DatabaseOptionCharset:
			tr.dbCharset[db] = strings.ToLower(o.Value)
		case ast.DatabaseOptionCollate:
			tr.dbCharset[db] = tr.charsetOfCollation(o.Value)
		}
	}
	return append(changed, db+"\x00")
}

// mayTouch reports whether an unparsable DDL could concern a tracked
// database: it ers towards yes.
func (tr *schemaTracker) mayTouch(defaultDB string, toks []string) bool {
	obj := strings.ToLower(toks[1])
	if obj == "or" || obj == "temporary" || obj == "online" || obj == "ignore" {
		obj = "table"
	}
	switch obj {
	case "table", "database", "schema":
	default:
		return false // CREATE USER/FUNCTION/INDEX..., DROP VIEW...: no column shape
	}
	if tr.dbs[defaultDB] {
		return true
	}
	for _, t := range toks[2:] {
		db, _, _ := strings.Cut(t, ".")
		if tr.dbs[db] {
			return true
		}
	}
	return false
}

func (tr *schemaTracker) charsetOfCollation(coll string) string {
	coll = strings.ToLower(coll)
	if cs, ok := tr.collations[coll]; ok {
		return cs
	}
	cs, _, _ := strings.Cut(coll, "_")
	return cs
}

// defaultCharset is what a new text column of db gets without a charset
// of its own or of its table.
func (tr *schemaTracker) defaultCharset(db string) string {
	if cs := tr.dbCharset[db]; cs != "" {
		return cs
	}
	return tr.server
}

func tableCharset(tr *schemaTracker, opts []*ast.TableOption) string {
	for _, o := range opts {
		switch o.Tp {
		case ast.TableOptionCharset:
			return strings.ToLower(o.StrValue)
		case ast.TableOptionCollate:
			return tr.charsetOfCollation(o.StrValue)
		}
	}
	return ""
}

func (tr *schemaTracker) createDef(db string, st *ast.CreateTableStmt) (*tableDef, error) {
	def := &tableDef{Charset: tableCharset(tr, st.Options)}
	if def.Charset == "" {
		def.Charset = tr.defaultCharset(db)
	}
	for _, cd := range st.Cols {
		c, pk, err := tr.colFromAST(cd, def.Charset)
		if err != nil {
			return nil, err
		}
		def.Columns = append(def.Columns, c)
		if pk {
			def.PK = []string{c.Name}
		}
	}
	for _, con := range st.Constraints {
		if con.Tp == ast.ConstraintPrimaryKey {
			def.PK = nil
			for _, k := range con.Keys {
				if k.Column == nil {
					return nil, fmt.Errorf("primary key on an expression")
				}
				def.PK = append(def.PK, k.Column.Name.O)
			}
		}
	}
	return def, nil
}

// alter applies ALTER TABLE specs in order; it returns the table's new key
// after a RENAME.
func (tr *schemaTracker) alter(db string, def *tableDef, specs []*ast.AlterTableSpec) (newKey string, err error) {
	for _, sp := range specs {
		switch sp.Tp {
		case ast.AlterTableAddColumns:
			err = tr.alterAddColumns(def, sp)
		case ast.AlterTableDropColumn:
			err = alterDropColumn(def, sp)
		case ast.AlterTableModifyColumn, ast.AlterTableChangeColumn:
			err = tr.alterModifyColumn(def, sp)
		case ast.AlterTableRenameColumn:
			i := def.col(sp.OldColumnName.Name.O)
			if i < 0 {
				return "", fmt.Errorf("RENAME COLUMN %s: no such column", sp.OldColumnName.Name.O)
			}
			def.renamePK(def.Columns[i].Name, sp.NewColumnName.Name.O)
			def.Columns[i].Name = sp.NewColumnName.Name.O
		case ast.AlterTableRenameTable:
			ndb := sp.NewTable.Schema.O
			if ndb == "" {
				ndb = db
			}
			if !tr.dbs[ndb] {
				return "", fmt.Errorf("renamed into database %s, which readside does not capture", ndb)
			}
			newKey = tableKey(ndb, sp.NewTable.Name.O)
		case ast.AlterTableAddConstraint:
			err = alterAddPrimaryKey(def, sp.Constraint)
		case ast.AlterTableDropPrimaryKey:
			def.PK = nil
		case ast.AlterTableOption:
			tr.alterTableCharset(def, sp.Options)
		case ast.AlterTableDropIndex, ast.AlterTableDropForeignKey, ast.AlterTableLock, ast.AlterTableAlgorithm,
			ast.AlterTableRenameIndex, ast.AlterTableForce, ast.AlterTableEnableKeys, ast.AlterTableDisableKeys,
			ast.AlterTableAlterCheck, ast.AlterTableDropCheck, ast.AlterTableIndexInvisible, ast.AlterTableOrderByColumns,
			ast.AlterTableAddPartitions, ast.AlterTableCoalescePartitions, ast.AlterTableDropPartition,
			ast.AlterTableTruncatePartition, ast.AlterTablePartition, ast.AlterTableRemovePartitioning,
			ast.AlterTableRebuildPartition, ast.AlterTableReorganizePartition, ast.AlterTableCheckPartitions,
			ast.AlterTableExchangePartition, ast.AlterTableOptimizePartition, ast.AlterTableRepairPartition,
			ast.AlterTableWithValidation, ast.AlterTableWithoutValidation:
			// No effect on the columns.
		case ast.AlterTableAlterColumn:
			// SET/DROP DEFAULT: no effect on the row image.
		default:
			return "", fmt.Errorf("ALTER TABLE clause type %d is not followed", sp.Tp)
		}
		if err != nil {
			return "", err
		}
	}
	return newKey, nil
}

// placeColumn puts c into def's columns at pos. at is the column's current
// index (-1 if new); without a position a new column goes last and an
// existing one stays.
func placeColumn(def *tableDef, c colDef, pos *ast.ColumnPosition, at int) error {
	if at >= 0 {
		def.Columns = slices.Delete(def.Columns, at, at+1)
	}
	i := len(def.Columns)
	if at >= 0 {
		i = at
	}
	if pos != nil {
		switch pos.Tp {
		case ast.ColumnPositionFirst:
			i = 0
		case ast.ColumnPositionAfter:
			j := def.col(pos.RelativeColumn.Name.O)
			if j < 0 {
				return fmt.Errorf("AFTER %s: no such column", pos.RelativeColumn.Name.O)
			}
			i = j + 1
		}
	}
	def.Columns = slices.Insert(def.Columns, i, c)
	return nil
}

// renamePK follows a column rename into the primary key.
func (d *tableDef) renamePK(from, to string) {
	for i, k := range d.PK {
		if strings.EqualFold(k, from) {
			d.PK[i] = to
		}
	}
}

// alterAddColumns follows ADD COLUMN.
func (tr *schemaTracker) alterAddColumns(def *tableDef, sp *ast.AlterTableSpec) error {
	for _, cd := range sp.NewColumns {
		if def.col(cd.Name.Name.O) >= 0 {
			if sp.IfNotExists {
				continue
			}
			return fmt.Errorf("ADD COLUMN %s: the column already exists", cd.Name.Name.O)
		}
		c, pk, err := tr.colFromAST(cd, def.Charset)
		if err != nil {
			return err
		}
		if err := placeColumn(def, c, sp.Position, -1); err != nil {
			return err
		}
		if pk {
			def.PK = []string{c.Name}
		}
	}
	return nil
}

// alterDropColumn follows DROP COLUMN, which also drops the column from
// the primary key.
func alterDropColumn(def *tableDef, sp *ast.AlterTableSpec) error {
	i := def.col(sp.OldColumnName.Name.O)
	if i < 0 {
		if sp.IfExists {
			return nil
		}
		return fmt.Errorf("DROP COLUMN %s: no such column", sp.OldColumnName.Name.O)
	}
	name := def.Columns[i].Name
	def.Columns = slices.Delete(def.Columns, i, i+1)
	def.PK = slices.DeleteFunc(def.PK, func(k string) bool { return strings.EqualFold(k, name) })
	return nil
}

// alterModifyColumn follows MODIFY COLUMN and CHANGE COLUMN (which may
// also rename it).
func (tr *schemaTracker) alterModifyColumn(def *tableDef, sp *ast.AlterTableSpec) error {
	cd := sp.NewColumns[0]
	old := cd.Name.Name.O
	if sp.Tp == ast.AlterTableChangeColumn {
		old = sp.OldColumnName.Name.O
	}
	i := def.col(old)
	if i < 0 {
		if sp.IfExists {
			return nil
		}
		return fmt.Errorf("column %s: no such column", old)
	}
	// Without a charset of its own the column takes the table
	// default, as the server does.
	c, pk, err := tr.colFromAST(cd, def.Charset)
	if err != nil {
		return err
	}
	def.renamePK(def.Columns[i].Name, c.Name)
	if err := placeColumn(def, c, sp.Position, i); err != nil {
		return err
	}
	if pk {
		def.PK = []string{c.Name}
	}
	return nil
}

// alterAddPrimaryKey follows ADD PRIMARY KEY; other constraints do not
// change the row image.
func alterAddPrimaryKey(def *tableDef, con *ast.Constraint) error {
	if con.Tp != ast.ConstraintPrimaryKey {
		return nil
	}
	def.PK = nil
	for _, k := range con.Keys {
		if k.Column == nil {
			return fmt.Errorf("primary key on an expression")
		}
		def.PK = append(def.PK, def.Columns[max(0, def.col(k.Column.Name.O))].Name)
	}
	return nil
}

// alterTableCharset follows the table options that change its default
// charset; CONVERT TO CHARACTER SET also converts every text column.
func (tr *schemaTracker) alterTableCharset(def *tableDef, opts []*ast.TableOption) {
	for _, o := range opts {
		switch o.Tp {
		case ast.TableOptionCharset, ast.TableOptionCollate:
			cs := tableCharset(tr, []*ast.TableOption{o})
			if o.UintValue == ast.TableOptionCharsetWithConvertTo {
				for i := range def.Columns {
					if def.Columns[i].Charset != "" && def.Columns[i].Charset != "binary" {
						def.Columns[i].Charset = cs
					}
				}
			}
			def.Charset = cs
		}
	}
}
