package cdc

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	pmysql "github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/types"
)

// colFromAST turns a parsed column definition into a colDef, and says
// whether it declares itself the primary key.
func (tr *schemaTracker) colFromAST(cd *ast.ColumnDef, tableCS string) (colDef, bool, error) {
	ft := cd.Tp
	c := colDef{Name: cd.Name.Name.O, Unsigned: pmysql.HasUnsignedFlag(ft.GetFlag())}
	var pk bool
	c.Charset, pk = tr.columnCharset(cd, tableCS)
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
		text(sizedTextType(c.Charset, flen))
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

// columnCharset is a column definition's charset: its COLLATE option, its
// CHARACTER SET or COLLATE type attribute, else the table default (as the
// server does). It also says whether the definition declares itself the
// primary key.
func (tr *schemaTracker) columnCharset(cd *ast.ColumnDef, tableCS string) (cs string, pk bool) {
	for _, o := range cd.Options {
		switch o.Tp {
		case ast.ColumnOptionPrimaryKey:
			pk = true
		case ast.ColumnOptionCollate:
			cs = tr.charsetOfCollation(o.StrValue)
		}
	}
	ft := cd.Tp
	charset := strings.ToLower(ft.GetCharset())
	if charset == "" && ft.GetCollate() != "" {
		charset = tr.charsetOfCollation(ft.GetCollate())
	}
	if cs == "" {
		cs = charset
	}
	if cs == "" {
		cs = tableCS
	}
	return cs, pk
}

// sizedTextType is the type TEXT(n)/BLOB(n) declares: the smallest type
// that holds n characters.
func sizedTextType(charset string, flen int) string {
	bytes := int64(flen)
	if charset != "binary" {
		bytes *= mbMaxLen(charset)
	}
	switch {
	case flen <= 0 || bytes > 255 && bytes <= 65535:
		return "text"
	case bytes <= 255:
		return "tinytext"
	case bytes <= 1<<24-1:
		return "mediumtext"
	default:
		return "longtext"
	}
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
