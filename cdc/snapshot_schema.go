package cdc

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/readside/readside/internal/sourcedb"
	"github.com/readside/readside/internal/sqlquote"
)

// Snapshot rows are read with SQL, not from the binlog, yet their events
// must be byte-identical to what the binlog path would publish for the same
// row: the same record key (so they share a partition with the row's live
// changes) and the same value encoding (PeerDB#3950 is that bug class). This
// file maps information_schema types and the text protocol's values onto
// the binlog path's column kinds and encoders.

// schemaTable reads a table's columns and primary key from
// information_schema and builds the same table shape the binlog path builds
// from a TABLE_MAP event.
// keyCols are its source.keys columns, nil to key it by its primary key.
func (s *sourceDB) schemaTable(ctx context.Context, db, name, topic string, excluded map[string]bool, keyCols []string) (*table, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COALESCE(CHARACTER_SET_NAME, ''),
		COALESCE(NUMERIC_PRECISION, 0), COALESCE(NUMERIC_SCALE, 0), COALESCE(DATETIME_PRECISION, 0), COALESCE(CHARACTER_MAXIMUM_LENGTH, 0), IS_NULLABLE,
		COALESCE(COLLATION_NAME, '')
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, db, name)
	if err != nil {
		return nil, fmt.Errorf("reading columns of %s.%s: %w", db, name, err)
	}
	defer rows.Close()
	t := &table{db: db, name: name, topic: topic}
	var nullable []bool
	var masked []int // columns whose member names information_schema may mask
	for rows.Next() {
		var colName, dataType, colType, charset, isNullable, collation string
		var prec, scale, dtPrec, maxLen int64
		if err := rows.Scan(&colName, &dataType, &colType, &charset, &prec, &scale, &dtPrec, &maxLen, &isNullable, &collation); err != nil {
			return nil, err
		}
		col, err := schemaColumn(colName, strings.ToLower(dataType), colType, charset, prec, scale, dtPrec, maxLen)
		if err != nil {
			return nil, fmt.Errorf("table %s.%s: %w", db, name, err)
		}
		if col.kind == kindText || col.kind == kindEnum || col.kind == kindSet {
			// As the binlog path names it (table_collations.go).
			col.collation = collation
		}
		col.excluded = excluded[colName]
		if (col.kind == kindEnum || col.kind == kindSet) && sourcedb.MembersMayBeMasked(charset, col.members) {
			masked = append(masked, len(t.columns))
		}
		t.columns = append(t.columns, col)
		t.colNames = append(t.colNames, colName)
		nullable = append(nullable, isNullable == "YES")
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	// A snapshot reads values as text, exact whatever the names; they name
	// a Debezium schema's allowed values, so the exact ones are read when the
	// user may, and information_schema's kept otherwise.
	for _, i := range masked {
		c := &t.columns[i]
		if exact, err := s.exactMembers(ctx, db, name, c.name, strings.ToUpper(c.typeName), len(c.members)); err == nil {
			c.members = exact
		}
	}
	if len(t.columns) == 0 {
		return nil, &unsnapshottable{fmt.Sprintf("table %s.%s does not exist on the source (dropped after the snapshot was requested?)", db, name)}
	}
	pk, err := s.db.QueryContext(ctx, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY'`+sourcedb.NotRowEnd("STATISTICS")+` ORDER BY SEQ_IN_INDEX`, db, name)
	if err != nil {
		return nil, err
	}
	defer pk.Close()
	var pkIdx []int
	for pk.Next() {
		var c string
		if err := pk.Scan(&c); err != nil {
			return nil, err
		}
		for i, n := range t.colNames {
			if n == c {
				pkIdx = append(pkIdx, i)
			}
		}
	}
	if err := pk.Err(); err != nil {
		return nil, err
	}
	if err := t.setKey(pkIdx, keyCols, func(i int) bool { return nullable[i] }); err != nil {
		return nil, &unsnapshottable{err.Error()}
	}
	t.encodeSchema()
	return t, nil
}

// unsnapshottable is a table the source has no way to snapshot as it is
// now (gone, or without a primary key): a retry of the same request reads
// the same answer, so the request fails instead (isRequestError).
type unsnapshottable struct{ msg string }

func (e *unsnapshottable) Error() string { return e.msg }

// schemaColumn maps one information_schema column to the binlog path's
// kind and type name.
func schemaColumn(name, dataType, colType, charset string, prec, scale, dtPrec, maxLen int64) (column, error) {
	col := column{name: name}
	// colType keeps its case: it holds ENUM and SET member names.
	unsigned := strings.Contains(strings.ToLower(colType), "unsigned")
	withFraction := func(base string) string {
		col.fraction = int(dtPrec)
		if dtPrec > 0 {
			return fmt.Sprintf("%s(%d)", base, dtPrec)
		}
		return base
	}
	switch dataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint":
		col.kind, col.typeName = kindInt, dataType
		if unsigned {
			col.typeName += " unsigned"
		}
	case "year":
		col.kind, col.typeName = kindInt, "year"
	case "float":
		col.kind, col.typeName = kindFloat32, "float"
	case "double", "real":
		col.kind, col.typeName = kindFloat64, "double"
	case "decimal", "numeric":
		col.kind, col.fraction, col.typeName = kindDecimal, int(scale), fmt.Sprintf("decimal(%d,%d)", prec, scale)
	case "bit":
		col.kind, col.typeName = kindBit, fmt.Sprintf("bit(%d)", prec)
	case "date":
		col.kind, col.typeName = kindTemporal, "date"
	case "datetime", "timestamp", "time":
		col.kind = kindTemporal
		col.typeName = withFraction(dataType)
	case "enum":
		col.kind, col.typeName, col.members = kindEnum, "enum", sourcedb.ParseMembers(colType)
	case "set":
		col.kind, col.typeName, col.members = kindSet, "set", sourcedb.ParseMembers(colType)
	case "json":
		col.kind, col.typeName = kindJSON, "json"
	case "binary":
		col.kind, col.typeName, col.padTo = kindBinary, fmt.Sprintf("binary(%d)", maxLen), int(maxLen)
	case "varbinary":
		col.kind, col.typeName = kindBinary, "varbinary"
	case "tinyblob", "blob", "mediumblob", "longblob":
		col.kind, col.typeName = kindBinary, "blob"
	case "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
		col.kind, col.typeName = kindBinary, "geometry"
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		if charset == "binary" {
			return col, fmt.Errorf("column %s: %s with the binary charset is not supported; use BINARY/VARBINARY/BLOB", name, dataType)
		}
		col.kind = kindText
		switch dataType {
		case "char", "varchar":
			col.typeName = dataType
		default:
			col.typeName = "text"
		}
	default:
		return col, fmt.Errorf("column %s: type %s is not supported; exclude the column (source.exclude_columns) or change its type", name, colType)
	}
	return col, nil
}

// appendSQLValue appends a value read with the text protocol (the
// connection's charset is utf8mb4 and its time zone UTC) in the binlog
// path's encoding for col.
func (col *column) appendSQLValue(buf []byte, v sql.RawBytes) ([]byte, error) {
	if v == nil {
		return append(buf, "null"...), nil
	}
	switch col.kind {
	case kindInt:
		// A ZEROFILL column's text is padded with zeros ("00042"), which
		// is no JSON number; the binlog path publishes 42.
		for len(v) > 1 && v[0] == '0' {
			v = v[1:]
		}
		if shortInteger(v) {
			return append(buf, v...), nil
		}
		if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
			if _, err := strconv.ParseUint(string(v), 10, 64); err != nil {
				return nil, fmt.Errorf("column %s: %q is not an integer", col.name, v)
			}
		}
		return append(buf, v...), nil
	case kindBit:
		var b [8]byte
		copy(b[8-min(len(v), 8):], v)
		return strconv.AppendUint(buf, binary.BigEndian.Uint64(b[:]), 10), nil
	case kindFloat32, kindFloat64:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return nil, fmt.Errorf("column %s: %q is not a number", col.name, v)
		}
		if col.kind == kindFloat32 {
			return strconv.AppendFloat(buf, float64(float32(f)), 'g', -1, 32), nil
		}
		return strconv.AppendFloat(buf, f, 'g', -1, 64), nil
	case kindTemporal:
		return appendJSONString(buf, fixFraction(string(v), col.fraction)), nil
	case kindDecimal, kindText, kindJSON, kindEnum, kindSet:
		return appendJSONString(buf, v), nil
	case kindBinary:
		b := []byte(v)
		if len(b) < col.padTo {
			b = append(b, make([]byte, col.padTo-len(b))...)
		}
		buf = append(buf, '"')
		buf = base64.StdEncoding.AppendEncode(buf, b)
		return append(buf, '"'), nil
	}
	return nil, fmt.Errorf("column %s: no text encoding for kind %d", col.name, col.kind)
}

// shortInteger reports an optional minus and 1 to 18 digits: an integer
// that fits every integer column, told without a conversion (the snapshot
// checks each integer it reads; this is nearly all of them).
func shortInteger(v []byte) bool {
	if len(v) > 0 && v[0] == '-' {
		v = v[1:]
	}
	if len(v) == 0 || len(v) > 18 {
		return false
	}
	for _, b := range v {
		if b < '0' || b > '9' {
			return false
		}
	}
	return true
}

// appendSQLRow and appendSQLKey are appendRow and appendKey for rows read
// with SQL.
func (t *table) appendSQLRow(buf []byte, row []sql.RawBytes) ([]byte, error) {
	return t.appendObject(buf, t.all(), func(buf []byte, c *column, i int) ([]byte, error) { return c.appendSQLValue(buf, row[i]) })
}

func (t *table) appendSQLKey(buf []byte, row []sql.RawBytes) ([]byte, error) {
	return t.appendObject(buf, t.pk, func(buf []byte, c *column, i int) ([]byte, error) { return c.appendSQLValue(buf, row[i]) })
}

// quoteIdent is sqlquote.Ident.
func quoteIdent(s string) string { return sqlquote.Ident(s) }
