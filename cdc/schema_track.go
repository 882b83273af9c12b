package cdc

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	pmysql "github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // literal values in parsed DDL
	"github.com/pingcap/tidb/pkg/parser/types"
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
	qual := func(tn *ast.TableName) (string, string) {
		db := tn.Schema.O
		if db == "" {
			db = defaultDB
		}
		return db, tn.Name.O
	}
	for _, stmt := range stmts {
		switch st := stmt.(type) {
		case *ast.CreateTableStmt:
			db, name := qual(st.Table)
			if !tr.dbs[db] || st.TemporaryKeyword != ast.TemporaryNone {
				continue
			}
			key := tableKey(db, name)
			if tr.tables[key] != nil && st.IfNotExists {
				continue
			}
			var def *tableDef
			switch {
			case st.ReferTable != nil:
				rdb, rname := qual(st.ReferTable)
				src := tr.def(rdb, rname)
				if src == nil {
					def = &tableDef{Unknown: sql}
				} else {
					def = src.clone()
				}
			case st.Select != nil:
				def = &tableDef{Unknown: sql}
			default:
				if def, err = tr.createDef(db, st); err != nil {
					return nil, ddlError(sql, err)
				}
			}
			tr.tables[key] = def
			changed = append(changed, key)
		case *ast.AlterTableStmt:
			db, name := qual(st.Table)
			if !tr.dbs[db] {
				continue
			}
			key := tableKey(db, name)
			def := tr.tables[key]
			if def == nil || def.Unknown != "" {
				// Not tracked (created before the snapshot in another
				// database, or already unknown): it stays unknown.
				tr.tables[key] = &tableDef{Unknown: sql}
				changed = append(changed, key)
				continue
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
			changed = append(changed, key)
		case *ast.RenameTableStmt:
			for _, tt := range st.TableToTables {
				odb, oname := qual(tt.OldTable)
				ndb, nname := qual(tt.NewTable)
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
		case *ast.DropTableStmt:
			if st.IsView {
				continue
			}
			for _, tn := range st.Tables {
				db, name := qual(tn)
				if tr.dbs[db] {
					delete(tr.tables, tableKey(db, name))
					changed = append(changed, tableKey(db, name))
				}
			}
		case *ast.DropDatabaseStmt:
			db := st.Name.O
			if !tr.dbs[db] {
				continue
			}
			for key := range tr.tables {
				if strings.HasPrefix(key, db+"\x00") {
					delete(tr.tables, key)
					changed = append(changed, key)
				}
			}
		case *ast.CreateDatabaseStmt, *ast.AlterDatabaseStmt:
			var db string
			var opts []*ast.DatabaseOption
			if c, ok := st.(*ast.CreateDatabaseStmt); ok {
				db, opts = c.Name.O, c.Options
			} else {
				a := st.(*ast.AlterDatabaseStmt)
				db, opts = a.Name.O, a.Options
				if db == "" {
					db = defaultDB
				}
			}
			if !tr.dbs[db] {
				continue
			}
			for _, o := range opts {
				switch o.Tp {
				case ast.DatabaseOptionCharset:
					tr.dbCharset[db] = strings.ToLower(o.Value)
				case ast.DatabaseOptionCollate:
					tr.dbCharset[db] = tr.charsetOfCollation(o.Value)
				}
			}
			changed = append(changed, db+"\x00")
		}
	}
	return changed, nil
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
	place := func(c colDef, pos *ast.ColumnPosition, at int) error {
		// at: the column's current index (-1 if new); without a position
		// a new column goes last and an existing one stays.
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
	renamePK := func(from, to string) {
		for i, k := range def.PK {
			if strings.EqualFold(k, from) {
				def.PK[i] = to
			}
		}
	}
	for _, sp := range specs {
		switch sp.Tp {
		case ast.AlterTableAddColumns:
			for _, cd := range sp.NewColumns {
				if def.col(cd.Name.Name.O) >= 0 {
					if sp.IfNotExists {
						continue
					}
					return "", fmt.Errorf("ADD COLUMN %s: the column already exists", cd.Name.Name.O)
				}
				c, pk, err := tr.colFromAST(cd, def.Charset)
				if err != nil {
					return "", err
				}
				if err := place(c, sp.Position, -1); err != nil {
					return "", err
				}
				if pk {
					def.PK = []string{c.Name}
				}
			}
		case ast.AlterTableDropColumn:
			i := def.col(sp.OldColumnName.Name.O)
			if i < 0 {
				if sp.IfExists {
					continue
				}
				return "", fmt.Errorf("DROP COLUMN %s: no such column", sp.OldColumnName.Name.O)
			}
			name := def.Columns[i].Name
			def.Columns = slices.Delete(def.Columns, i, i+1)
			def.PK = slices.DeleteFunc(def.PK, func(k string) bool { return strings.EqualFold(k, name) })
		case ast.AlterTableModifyColumn, ast.AlterTableChangeColumn:
			cd := sp.NewColumns[0]
			old := cd.Name.Name.O
			if sp.Tp == ast.AlterTableChangeColumn {
				old = sp.OldColumnName.Name.O
			}
			i := def.col(old)
			if i < 0 {
				if sp.IfExists {
					continue
				}
				return "", fmt.Errorf("column %s: no such column", old)
			}
			c, pk, err := tr.colFromAST(cd, def.Charset)
			if err != nil {
				return "", err
			}
			// Without a charset of its own the column takes the table
			// default, as the server does.
			renamePK(def.Columns[i].Name, c.Name)
			if err := place(c, sp.Position, i); err != nil {
				return "", err
			}
			if pk {
				def.PK = []string{c.Name}
			}
		case ast.AlterTableRenameColumn:
			i := def.col(sp.OldColumnName.Name.O)
			if i < 0 {
				return "", fmt.Errorf("RENAME COLUMN %s: no such column", sp.OldColumnName.Name.O)
			}
			renamePK(def.Columns[i].Name, sp.NewColumnName.Name.O)
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
			if sp.Constraint.Tp == ast.ConstraintPrimaryKey {
				def.PK = nil
				for _, k := range sp.Constraint.Keys {
					if k.Column == nil {
						return "", fmt.Errorf("primary key on an expression")
					}
					def.PK = append(def.PK, def.Columns[max(0, def.col(k.Column.Name.O))].Name)
				}
			}
		case ast.AlterTableDropPrimaryKey:
			def.PK = nil
		case ast.AlterTableOption:
			for _, o := range sp.Options {
				switch o.Tp {
				case ast.TableOptionCharset, ast.TableOptionCollate:
					cs := tableCharset(tr, []*ast.TableOption{o})
					if o.UintValue == ast.TableOptionCharsetWithConvertTo {
						// CONVERT TO CHARACTER SET converts every text column.
						for i := range def.Columns {
							if def.Columns[i].Charset != "" && def.Columns[i].Charset != "binary" {
								def.Columns[i].Charset = cs
							}
						}
					}
					def.Charset = cs
				}
			}
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
	}
	return newKey, nil
}

// colFromAST turns a parsed column definition into a colDef, and says
// whether it declares itself the primary key.
func (tr *schemaTracker) colFromAST(cd *ast.ColumnDef, tableCS string) (colDef, bool, error) {
	ft := cd.Tp
	c := colDef{Name: cd.Name.Name.O, Unsigned: pmysql.HasUnsignedFlag(ft.GetFlag())}
	pk := false
	for _, o := range cd.Options {
		switch o.Tp {
		case ast.ColumnOptionPrimaryKey:
			pk = true
		case ast.ColumnOptionCollate:
			c.Charset = tr.charsetOfCollation(o.StrValue)
		}
	}
	charset := strings.ToLower(ft.GetCharset())
	if charset == "" && ft.GetCollate() != "" {
		charset = tr.charsetOfCollation(ft.GetCollate())
	}
	if c.Charset == "" {
		c.Charset = charset
	}
	if c.Charset == "" {
		c.Charset = tableCS
	}
	flen, dec := ft.GetFlen(), ft.GetDecimal()
	fsp := int64(max(dec, 0))
	text := func(base string) {
		if c.Charset == "binary" {
			base = map[string]string{"char": "binary", "varchar": "varbinary", "tinytext": "tinyblob", "text": "blob", "mediumtext": "mediumblob", "longtext": "longblob"}[base]
		}
		c.Type = base
	}
	switch ft.GetType() {
	case pmysql.TypeTiny:
		c.Type = "tinyint"
	case pmysql.TypeShort:
		c.Type = "smallint"
	case pmysql.TypeInt24:
		c.Type = "mediumint"
	case pmysql.TypeLong:
		c.Type = "int"
	case pmysql.TypeLonglong:
		c.Type = "bigint"
	case pmysql.TypeYear:
		c.Type = "year"
	case pmysql.TypeFloat:
		c.Type = "float"
		if flen > 24 {
			c.Type = "double"
		}
	case pmysql.TypeDouble:
		c.Type = "double"
	case pmysql.TypeNewDecimal:
		c.Type, c.Prec, c.Scale = "decimal", 10, 0
		if flen > 0 {
			c.Prec = int64(flen)
		}
		if dec > 0 {
			c.Scale = int64(dec)
		}
	case pmysql.TypeBit:
		c.Type, c.Prec = "bit", int64(max(flen, 1))
	case pmysql.TypeDate:
		c.Type = "date"
	case pmysql.TypeDatetime:
		c.Type, c.FSP = "datetime", fsp
	case pmysql.TypeTimestamp:
		c.Type, c.FSP = "timestamp", fsp
	case pmysql.TypeDuration:
		c.Type, c.FSP = "time", fsp
	case pmysql.TypeEnum, pmysql.TypeSet:
		c.Type, c.Members = "enum", slices.Clone(ft.GetElems())
		if ft.GetType() == pmysql.TypeSet {
			c.Type = "set"
		}
		c.Charset = ""
	case pmysql.TypeJSON:
		c.Type, c.Charset = "json", ""
		if tr.flavor == "mariadb" {
			// MariaDB's JSON is an alias of LONGTEXT (utf8mb4_bin).
			c.Type, c.Charset = "longtext", "utf8mb4"
		}
	case pmysql.TypeString:
		text("char")
		c.Length = int64(max(flen, 1))
	case pmysql.TypeVarchar, pmysql.TypeVarString:
		text("varchar")
	case pmysql.TypeTinyBlob:
		text("tinytext")
	case pmysql.TypeMediumBlob:
		text("mediumtext")
	case pmysql.TypeLongBlob:
		text("longtext")
	case pmysql.TypeBlob:
		// TEXT(n)/BLOB(n) is the smallest type that holds n characters.
		bytes := int64(flen)
		if c.Charset != "binary" {
			bytes *= mbMaxLen(c.Charset)
		}
		switch {
		case flen <= 0 || bytes > 255 && bytes <= 65535:
			text("text")
		case bytes <= 255:
			text("tinytext")
		case bytes <= 1<<24-1:
			text("mediumtext")
		default:
			text("longtext")
		}
	default:
		return c, false, fmt.Errorf("column %s: type %s is not tracked", c.Name, types.TypeToStr(ft.GetType(), ft.GetCharset()))
	}
	switch c.Type {
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext",
		"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
	default:
		c.Charset = ""
	}
	return c, pk, nil
}

// mbMaxLen is the longest character of a charset in bytes, for TEXT(n).
func mbMaxLen(charset string) int64 {
	switch charset {
	case "latin1", "ascii", "latin2", "cp1250", "cp1251", "cp1256", "cp1257", "greek", "hebrew", "koi8r", "koi8u":
		return 1
	case "gbk", "gb2312", "big5", "sjis", "cp932", "euckr":
		return 2
	case "utf8", "utf8mb3", "ujis", "eucjpms":
		return 3
	}
	return 4
}

// trackedTable builds the table of a TABLE_MAP event from its tracked
// definition, after checking that the two agree column by column.
func trackedTable(tm *replication.TableMapEvent, def *tableDef, topic string, excluded map[string]bool, charsetOf func(uint64) string) (*table, error) {
	qualified := string(tm.Schema) + "." + string(tm.Table)
	fix := "set binlog_row_metadata=FULL on the source, or re-snapshot the schema history (docs/operations.md, \"schema history\")"
	if def == nil {
		return nil, fmt.Errorf("table %s: readside's schema history does not know it (created outside the tracked databases?): %s", qualified, fix)
	}
	if def.Unknown != "" {
		return nil, fmt.Errorf("table %s: its shape is unknown since %q, which the schema history could not follow: %s", qualified, def.Unknown, fix)
	}
	if len(def.Columns) != int(tm.ColumnCount) {
		return nil, fmt.Errorf("table %s: the binlog has %d columns but readside's schema history has %d (%s): refusing to guess which value belongs to which column; %s",
			qualified, tm.ColumnCount, len(def.Columns), colNames(def), fix)
	}
	if len(def.PK) == 0 {
		return nil, fmt.Errorf("table %s has no primary key: readside keys every event by it; add a primary key or remove the table from source.tables", qualified)
	}
	t := &table{db: string(tm.Schema), name: string(tm.Table), topic: topic, tracked: true,
		colTypes: slices.Clone(tm.ColumnType), colMeta: slices.Clone(tm.ColumnMeta)}
	collations := tm.CollationMap()
	signedness := tm.UnsignedMap()
	for i, cd := range def.Columns {
		typ, meta := realType(tm.ColumnType[i], tm.ColumnMeta[i])
		if !binlogTypeFits(cd, typ, meta) {
			return nil, fmt.Errorf("table %s column %d: the binlog has type %d (meta %d) but readside's schema history has %s %s (%s): %s",
				qualified, i+1, typ, meta, cd.Name, colTypeString(cd), colNames(def), fix)
		}
		colType := cd.Type
		if cd.Unsigned {
			colType += " unsigned"
		}
		charset := cd.Charset
		if coll, ok := collations[i]; ok {
			charset = charsetOf(coll) // MINIMAL metadata carries it: the binlog's own word wins
		}
		col, err := schemaColumn(cd.Name, cd.Type, colType, charset, cd.Prec, cd.Scale, cd.FSP, cd.Length)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", qualified, err)
		}
		switch col.kind {
		case kindText:
			if col.decoder, err = charsetDecoder(charset); err != nil {
				return nil, fmt.Errorf("table %s column %s: %w", qualified, cd.Name, err)
			}
		case kindEnum, kindSet:
			col.members = cd.Members
		case kindInt:
			// Rows are decoded as signed (rowdecode.Signless); the binlog's own
			// signedness wins when it carries one.
			unsigned := cd.Unsigned
			if len(signedness) > 0 {
				unsigned = signedness[i]
			}
			if unsigned {
				col.unsignedBits = intWidth(typ)
			}
		}
		col.excluded = excluded[cd.Name]
		t.columns = append(t.columns, col)
		t.colNames = append(t.colNames, cd.Name)
	}
	for _, k := range def.PK {
		i := def.col(k)
		if i < 0 {
			return nil, fmt.Errorf("table %s: primary key column %s is not among its columns in the schema history: %s", qualified, k, fix)
		}
		if t.columns[i].excluded {
			return nil, fmt.Errorf("table %s: column %s is excluded (source.exclude_columns) but part of the primary key; keep it", qualified, k)
		}
		t.pk = append(t.pk, i)
	}
	t.encodeSchema()
	return t, nil
}

func colNames(def *tableDef) string {
	names := make([]string, len(def.Columns))
	for i, c := range def.Columns {
		names[i] = c.Name
	}
	return "columns " + strings.Join(names, ", ")
}

func colTypeString(c colDef) string {
	s := c.Type
	switch c.Type {
	case "decimal":
		s = fmt.Sprintf("decimal(%d,%d)", c.Prec, c.Scale)
	case "datetime", "timestamp", "time":
		if c.FSP > 0 {
			s = fmt.Sprintf("%s(%d)", c.Type, c.FSP)
		}
	}
	if c.Unsigned {
		s += " unsigned"
	}
	return s
}

// realType unpacks the type CHAR, BINARY, ENUM and SET hide in the
// metadata of MYSQL_TYPE_STRING.
func realType(typ byte, meta uint16) (byte, uint16) {
	if typ == mysql.MYSQL_TYPE_STRING && meta >= 256 {
		b0 := byte(meta >> 8)
		if b0&0x30 != 0x30 {
			return b0 | 0x30, meta
		}
		return b0, meta
	}
	return typ, meta
}

// binlogTypeFits reports whether a binlog column type (and the metadata
// that must agree) can be the tracked column: a mismatch means the tracked
// schema is not the one the row was written with.
func binlogTypeFits(c colDef, typ byte, meta uint16) bool {
	switch c.Type {
	case "tinyint":
		return typ == mysql.MYSQL_TYPE_TINY
	case "smallint":
		return typ == mysql.MYSQL_TYPE_SHORT
	case "mediumint":
		return typ == mysql.MYSQL_TYPE_INT24
	case "int":
		return typ == mysql.MYSQL_TYPE_LONG
	case "bigint":
		return typ == mysql.MYSQL_TYPE_LONGLONG
	case "year":
		return typ == mysql.MYSQL_TYPE_YEAR
	case "float":
		return typ == mysql.MYSQL_TYPE_FLOAT
	case "double", "real":
		return typ == mysql.MYSQL_TYPE_DOUBLE
	case "decimal", "numeric":
		return typ == mysql.MYSQL_TYPE_NEWDECIMAL && int64(meta>>8) == c.Prec && int64(meta&0xff) == c.Scale
	case "bit":
		return typ == mysql.MYSQL_TYPE_BIT && int64(meta>>8)*8+int64(meta&0xff) == c.Prec
	case "date":
		return typ == mysql.MYSQL_TYPE_DATE || typ == mysql.MYSQL_TYPE_NEWDATE
	case "datetime":
		return typ == mysql.MYSQL_TYPE_DATETIME && c.FSP == 0 || typ == mysql.MYSQL_TYPE_DATETIME2 && int64(meta) == c.FSP
	case "timestamp":
		return typ == mysql.MYSQL_TYPE_TIMESTAMP && c.FSP == 0 || typ == mysql.MYSQL_TYPE_TIMESTAMP2 && int64(meta) == c.FSP
	case "time":
		return typ == mysql.MYSQL_TYPE_TIME && c.FSP == 0 || typ == mysql.MYSQL_TYPE_TIME2 && int64(meta) == c.FSP
	case "enum":
		return typ == mysql.MYSQL_TYPE_ENUM
	case "set":
		return typ == mysql.MYSQL_TYPE_SET
	case "json":
		return typ == mysql.MYSQL_TYPE_JSON
	case "char", "binary":
		return typ == mysql.MYSQL_TYPE_STRING
	case "varchar", "varbinary":
		return typ == mysql.MYSQL_TYPE_VARCHAR || typ == mysql.MYSQL_TYPE_VAR_STRING
	case "tinytext", "tinyblob":
		return typ == mysql.MYSQL_TYPE_BLOB && meta == 1
	case "text", "blob":
		return typ == mysql.MYSQL_TYPE_BLOB && meta == 2
	case "mediumtext", "mediumblob":
		return typ == mysql.MYSQL_TYPE_BLOB && meta == 3
	case "longtext", "longblob":
		return typ == mysql.MYSQL_TYPE_BLOB && meta == 4
	case "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
		return typ == mysql.MYSQL_TYPE_GEOMETRY
	}
	return false
}
