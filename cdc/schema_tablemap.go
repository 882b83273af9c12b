package cdc

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// trackedTable builds the table of a TABLE_MAP event from its tracked
// definition, after checking that the two agree column by column.
func trackedTable(tm *replication.TableMapEvent, def *tableDef, topic string, excluded map[string]bool, keyCols []string, charsetOf func(uint64) string) (*table, error) {
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
	t := &table{db: string(tm.Schema), name: string(tm.Table), topic: topic, tracked: true,
		colTypes: slices.Clone(tm.ColumnType), colMeta: slices.Clone(tm.ColumnMeta), nullBits: slices.Clone(tm.NullBitmap)}
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
			if col.decoder, err = charsetDecoder(charset); err != nil && !excludedUndecodable(err, excluded[cd.Name]) {
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
	var pk []int
	for _, k := range def.PK {
		i := def.col(k)
		if i < 0 {
			return nil, fmt.Errorf("table %s: primary key column %s is not among its columns in the schema history: %s", qualified, k, fix)
		}
		pk = append(pk, i)
	}
	if err := t.setKey(pk, keyCols, mapNullable(tm)); err != nil {
		return nil, err
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
