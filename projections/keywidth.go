package projections

// An InnoDB index holds at most 3072 bytes of key (innodb_page_size 16k),
// and MariaDB refuses CREATE TABLE with "Specified key was too long" when
// the widest value of an index's columns would not fit. An aggregate's
// tables index its group columns (the read table's primary key) and its
// group columns with a value (a distinct values table's primary key, the
// min/max index of the contributions table), so a projection grouping by
// wide text columns is refused here, naming what to narrow, before any DDL
// runs. A key part's width is what MariaDB counts: the column's bytes at
// its widest (characters × the charset's longest character), without
// length prefixes or NULL flags.

import (
	"fmt"
	"strings"
)

// MaxIndexBytes is the widest key an InnoDB index holds.
const MaxIndexBytes = 3072

// KeyPartBytes is the bytes a column of definition def (as Types has it:
// "varchar(255) CHARACTER SET utf8mb4 COLLATE …", "int(11) NOT NULL")
// takes in an index key; ok is false for a type readside does not size
// (TEXT, BLOB and JSON cannot be key parts, and are refused elsewhere).
func KeyPartBytes(def string) (n int, ok bool) {
	d := strings.ToLower(strings.TrimSpace(def))
	name := d
	if i := strings.IndexAny(d, "( "); i >= 0 {
		name = d[:i]
	}
	args := typeArgs(d)
	arg := func(i, dflt int) int {
		if i < len(args) {
			return args[i]
		}
		return dflt
	}
	frac := func(base int) int { return base + (arg(0, 0)+1)/2 }
	switch name {
	case "tinyint", "year", "bool", "boolean":
		return 1, true
	case "smallint":
		return 2, true
	case "mediumint", "date":
		return 3, true
	case "int", "integer", "float":
		return 4, true
	case "bigint", "double", "real":
		return 8, true
	case "decimal", "numeric":
		prec, scale := arg(0, 10), arg(1, 0)
		return decimalBytes(prec-scale) + decimalBytes(scale), true
	case "bit":
		return (arg(0, 1) + 7) / 8, true
	case "datetime":
		return frac(5), true
	case "timestamp":
		return frac(4), true
	case "time":
		return frac(3), true
	case "enum":
		if strings.Count(d, "','") >= 255 {
			return 2, true
		}
		return 1, true
	case "set":
		members := strings.Count(d, "','") + 1
		if b := (members + 7) / 8; b <= 4 {
			return b, true
		}
		return 8, true
	case "binary", "varbinary":
		return arg(0, 1), true
	case "char", "varchar":
		return arg(0, 1) * mbMaxLen(d), true
	}
	return 0, false
}

// typeArgs are the numbers in a definition's first parentheses
// ("decimal(20,2)" → 20, 2); none for enum and set, whose parentheses
// hold their members.
func typeArgs(d string) []int {
	open := strings.IndexByte(d, '(')
	end := strings.IndexByte(d, ')')
	if open < 0 || end < open || strings.HasPrefix(d, "enum") || strings.HasPrefix(d, "set") {
		return nil
	}
	var out []int
	for _, s := range strings.Split(d[open+1:end], ",") {
		n := 0
		for _, c := range strings.TrimSpace(s) {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
		}
		out = append(out, n)
	}
	return out
}

// decimalBytes is the bytes of a DECIMAL's digits on one side of the
// point: 4 per 9 digits, and 1–4 for the rest.
func decimalBytes(digits int) int {
	return digits/9*4 + [9]int{0, 1, 1, 2, 2, 3, 3, 4, 4}[digits%9]
}

// mbMaxLen is the longest character, in bytes, of the charset named in
// definition d ("… character set utf8mb3 …"); 4 (utf8mb4's, the widest
// of the usual ones) when it names none or one not listed here.
func mbMaxLen(d string) int {
	_, rest, ok := strings.Cut(d, "character set ")
	if !ok {
		return 4
	}
	cs, _, _ := strings.Cut(rest, " ")
	switch cs {
	case "latin1", "ascii", "latin2", "latin5", "latin7", "cp1250", "cp1251", "cp1256", "cp1257", "cp850", "cp852", "cp866", "greek", "hebrew", "koi8r", "koi8u", "swe7", "armscii8", "geostd8", "keybcs2", "macce", "macroman", "dec8", "hp8", "tis620":
		return 1
	case "gbk", "gb2312", "big5", "sjis", "cp932", "euckr", "ucs2":
		return 2
	case "utf8", "utf8mb3", "ujis", "eucjpms":
		return 3
	}
	return 4
}

// keyPart is one column of an index, named for messages.
type keyPart struct {
	name, def string
}

// indexWidth is an index's widest key and its parts' widths for the
// message ("a 1020 + b 1020 + value 1024"); ok is false when a part's
// type is not sized (its problem is named elsewhere).
func indexWidth(parts []keyPart) (total int, detail string, ok bool) {
	var terms []string
	for _, p := range parts {
		n, sized := KeyPartBytes(p.def)
		if !sized {
			return 0, "", false
		}
		total += n
		terms = append(terms, fmt.Sprintf("%s %d", p.name, n))
	}
	return total, strings.Join(terms, " + "), true
}

// checkAggregateKeys refuses an aggregate projection whose read table,
// distinct values tables or min/max indexes would have a key wider than
// an InnoDB index holds, naming the widths and what to narrow. types are
// the definitions typeAggregates and checkOwnTable made; a column they
// lack had its problem named already.
func (p *Projection) checkAggregateKeys(types *Types) []error {
	var errs []error
	var groups []keyPart
	for _, c := range p.Columns {
		def, ok := types.Read[c.Name]
		if !ok {
			return nil
		}
		groups = append(groups, keyPart{name: c.Name, def: def})
	}
	narrower := "group by narrower columns (a shorter source column, or a columns entry such as CAST(x AS CHAR(n)) listed in group_by) or by fewer of them"
	if n, detail, ok := indexWidth(groups); ok && n > MaxIndexBytes {
		errs = append(errs, fmt.Errorf("projections.%s.group_by: the read table %s's primary key (its group columns) is up to %d bytes (%s), over the %d bytes an InnoDB index holds: %s",
			p.Name, p.Table, n, detail, MaxIndexBytes, narrower))
		// Each key below starts with the group columns: this one fix is
		// theirs too.
		return errs
	}
	for _, a := range p.Aggregation.Aggregates {
		var what, call string
		switch a.Func {
		case AggCountDistinct:
			what, call = "its distinct values table "+p.DistinctTable(a.Column)+"'s primary key (the group columns and the value)", "count(distinct CAST(x AS CHAR(%d)))"
		case AggSumDistinct:
			what = "its distinct values table " + p.DistinctTable(a.Column) + "'s primary key (the group columns and the value)"
		case AggMin, AggMax:
			what, call = "the contributions table "+p.ContributionsTable()+"'s index of its values (the group columns and the value)", string(a.Func)+"(CAST(x AS CHAR(%d)))"
		default:
			continue
		}
		def, ok := types.Contribution[a.Column]
		if !ok {
			continue
		}
		n, detail, ok := indexWidth(append(append([]keyPart{}, groups...), keyPart{name: "value", def: def}))
		if !ok || n <= MaxIndexBytes {
			continue
		}
		fix := narrower
		if v, _ := KeyPartBytes(def); isText(def) && call != "" {
			// The widest CHAR(n) that fits beside these group columns (a
			// CAST to CHAR is utf8mb4: 4 bytes a character).
			if room := (MaxIndexBytes - (n - v)) / 4; room > 0 {
				fix += ", or a shorter value, e.g. " + fmt.Sprintf(call, room)
			}
		}
		errs = append(errs, fmt.Errorf("projections.%s.aggregates.%s %q: %s is up to %d bytes (%s), over the %d bytes an InnoDB index holds: %s",
			p.Name, a.Column, a.Text, what, n, detail, MaxIndexBytes, fix))
	}
	return errs
}

// isText reports whether def is a character string type, the kind a
// CAST(x AS CHAR(n)) narrows.
func isText(def string) bool {
	d := strings.ToLower(def)
	return strings.HasPrefix(d, "char") || strings.HasPrefix(d, "varchar")
}

// wholeValueUnindexable reports a type an index keys only by a prefix
// (TEXT and BLOB kinds) or not at all (JSON, spatial types): a read table
// or state table keyed by such a column cannot be created, whatever the
// source does with a prefix of it.
func wholeValueUnindexable(def string) bool {
	d := strings.ToLower(strings.TrimSpace(def))
	if i := strings.IndexAny(d, "( "); i >= 0 {
		d = d[:i]
	}
	switch d {
	case "tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob", "json", "long",
		"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
		return true
	}
	return false
}

// checkReadKey refuses a projection whose read table's primary key (its
// key columns) or a join state table's (the parent's key columns) MySQL
// would refuse to create: a TEXT, BLOB, JSON or spatial column in it (a
// source keyed by a prefix of such a column, `PRIMARY KEY (url(255))`,
// or a computed column typed so), or a key wider than an InnoDB index
// holds (a source keyed by a prefix of a long VARCHAR). It runs before
// any DDL, so check and plan name it instead of run's CREATE TABLE
// failing. (An aggregate's read table keys are checkAggregateKeys'.)
func (p *Projection) checkReadKey(types *Types) []error {
	var errs []error
	fixFor := func(col string) string {
		fix := "key the source rows by columns an index holds whole: name a unique NOT NULL index without TEXT/BLOB columns in source.keys (docs/config.md), or make the source column a VARCHAR/VARBINARY"
		if p.column(col).Computed() {
			fix = fmt.Sprintf("give the computed column a type an index holds, e.g. column_types: {%s: \"varchar(255)\"}", col)
		}
		return fix
	}
	check := func(what, key string, parts []keyPart) {
		for _, kp := range parts {
			if wholeValueUnindexable(kp.def) {
				errs = append(errs, fmt.Errorf("%s: key column %s is %s, which MySQL indexes only by a prefix (or not at all), and readside keys %s by whole values: %s",
					key, kp.name, strings.Fields(kp.def)[0], what, fixFor(kp.name)))
				return
			}
		}
		if n, detail, ok := indexWidth(parts); ok && n > MaxIndexBytes {
			errs = append(errs, fmt.Errorf("%s: %s is keyed by up to %d bytes (%s), over the %d bytes an InnoDB index holds (a source may key such columns by a prefix; readside keys whole values): key by narrower or fewer columns",
				key, what, n, detail, MaxIndexBytes))
		}
	}
	if p.Aggregation == nil {
		var parts []keyPart
		for _, k := range p.Key {
			def, ok := types.Read[k]
			if !ok {
				parts = nil // its problem is named already
				break
			}
			parts = append(parts, keyPart{name: k, def: def})
		}
		if parts != nil {
			check("the read table "+p.Table, "projections."+p.Name+".key", parts)
		}
	}
	for i, j := range p.Joins {
		if i >= len(types.JoinKey) {
			break
		}
		var jparts []keyPart
		for _, on := range j.On {
			def, ok := types.JoinKey[i][on.Parent]
			if !ok {
				jparts = nil
				break
			}
			jparts = append(jparts, keyPart{name: on.Parent, def: def})
		}
		if jparts != nil {
			check(fmt.Sprintf("the state table of the join on %s.%s", j.ParentDB, j.ParentTbl), fmt.Sprintf("projections.%s.join[%d].on", p.Name, i), jparts)
		}
	}
	return errs
}
