package projections

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/config"
)

// compileChildren compiles `children` (nil errors when there are none).
// Every problem is reported, each naming its key and its fix; what needs
// the source schema (the child's columns, the parent's primary key) is
// checkChildren's.
func compileChildren(cfg config.Config, p *Projection, d config.Projection, key string, captured map[string]bool) []error {
	if len(d.Children) == 0 {
		return nil
	}
	var errs []error
	if d.Replicated {
		errs = append(errs, fmt.Errorf("%s.children: a replicated (reference) projection cannot nest children: nest them in a projection that is not replicated", key))
	}
	names := make([]string, 0, len(d.Children))
	for n := range d.Children {
		names = append(names, n)
	}
	sort.Strings(names)
	taken := takenReadColumns(d, key)
	for _, name := range names {
		c, cerrs := compileChild(cfg, p, d, key, name, taken, captured)
		errs = append(errs, cerrs...)
		p.Children = append(p.Children, c)
	}
	return errs
}

// takenReadColumns is every read column name the children columns could
// clash with, and the key that declares it.
func takenReadColumns(d config.Projection, key string) map[string]string {
	taken := map[string]string{}
	for c := range d.Columns {
		taken[c] = key + ".columns"
	}
	for i, j := range d.Join {
		for c := range j.Columns {
			taken[c] = fmt.Sprintf("%s.join[%d].columns", key, i)
		}
	}
	for c := range d.Aggregates {
		taken[c] = key + ".aggregates"
	}
	return taken
}

// compileChild compiles one children entry; its read columns (the array
// and its count) join taken.
func compileChild(cfg config.Config, p *Projection, d config.Projection, key, name string, taken map[string]string, captured map[string]bool) (*Children, []error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	cd := d.Children[name]
	ck := key + ".children." + name
	c := &Children{Name: name, CountColumn: name + "_count", OrderBy: cd.OrderBy, Limit: cd.Limit}
	for _, col := range []string{c.Name, c.CountColumn} {
		if why := readColumnProblem(col); why != "" {
			bad("%s: read column %q: %s: rename the children entry", ck, col, why)
			continue
		}
		if where, clash := taken[col]; clash {
			bad("%s: its read column %s is already a column of %s: rename one of them", ck, col, where)
			continue
		}
		taken[col] = ck
	}
	db, tbl, ok := config.SplitTable(cd.From)
	switch {
	case !ok:
		bad("%s.from %q: want db.table, e.g. shop.order_lines", ck, cd.From)
		c.fromBroken = true
	case !captured[cd.From]:
		bad("%s.from %s is not in source.tables: add it there so its changes reach the array", ck, cd.From)
	}
	c.SourceDB, c.SourceTbl, c.Topic = db, tbl, TopicOf(cfg, db, tbl)
	errs = append(errs, compileChildOn(c, p, d, key, ck, cd)...)
	errs = append(errs, compileChildElements(c, ck, cd)...)
	errs = append(errs, compileChildJoins(cfg, c, ck, cd, captured)...)
	if cd.Limit < 0 {
		bad("%s.limit %d: want the most elements an array holds, or 0 (or unset) for all of them", ck, cd.Limit)
	}
	return c, errs
}

// compileChildOn compiles a child's on: each child column references a
// parent column that a read column copies, by which the arrays are found.
func compileChildOn(c *Children, p *Projection, d config.Projection, key, ck string, cd config.Children) []error {
	var errs []error
	if len(cd.On) == 0 {
		errs = append(errs, fmt.Errorf("%s.on is empty: map each child column to the parent column it references, e.g. {order_id: id}", ck))
		c.onBroken = true
	}
	childCols := make([]string, 0, len(cd.On))
	for cc := range cd.On {
		childCols = append(childCols, cc)
	}
	sort.Strings(childCols)
	for _, cc := range childCols {
		pc := cd.On[cc]
		read := ""
		for _, col := range p.Columns {
			// A value that does not parse ("Cust Id") can only name a
			// column: a copy, as SourceColumns will find.
			if col.Source == pc && (col.typed == nil || col.parseErr != nil) {
				read = col.Name
				break
			}
		}
		if read == "" {
			errs = append(errs, fmt.Errorf("%s.on.%s: parent column %q is not copied into a read column of %s.columns: add %s: %s there (the arrays are found by it)%s", ck, cc, pc, key, pc, pc, copiesInstead(key, d, pc)))
			c.onBroken = true
			continue
		}
		c.On = append(c.On, ChildOn{Child: cc, Parent: pc, Read: read})
	}
	return errs
}

// compileChildElements compiles what an array element holds (columns,
// each copying one child column) and its order (order_by).
func compileChildElements(c *Children, ck string, cd config.Children) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(cd.Columns) == 0 {
		bad("%s.columns is empty: map each element member to a child column, e.g. {sku: sku, qty: qty}", ck)
	}
	members := make([]string, 0, len(cd.Columns))
	for m := range cd.Columns {
		members = append(members, m)
	}
	sort.Strings(members)
	for _, m := range members {
		src, ok := columnName(cd.Columns[m])
		if !ok {
			bad("%s.columns.%s %q: an element member copies one child column by name: name a column of %s (one whose name reads as an expression in backticks, `i-j`)", ck, m, cd.Columns[m], cd.From)
			continue
		}
		c.Columns = append(c.Columns, Column{Name: m, Source: src})
	}
	c.OrderBy = nil
	for k, text := range cd.OrderBy {
		o, ok := columnName(text)
		if f := strings.Fields(text); len(f) > 1 && (strings.EqualFold(f[len(f)-1], "desc") || strings.EqualFold(f[len(f)-1], "asc")) {
			// A direction, not the end of a column's name.
			ok = false
		}
		if !ok {
			bad("%s.order_by[%d] %q: order_by lists child columns by name (ascending): name a column of %s (one whose name reads as an expression in backticks, `i-j`)", ck, k, text, cd.From)
			continue
		}
		c.OrderBy = append(c.OrderBy, o)
	}
	return errs
}

// ChildTypes are the sink column definitions of one children entry.
type ChildTypes struct {
	// State maps each of Children.StateColumns (child columns) to its
	// definition in the state table: the child column's type, charset and
	// collation, always NULL-able (a deleted child keeps only its
	// version).
	State map[string]string
	// Link maps each link column (ChildOn.Child) to its definition in the
	// link table: the child column's, NOT NULL.
	Link map[string]string
	// JSON marks the state columns of MariaDB JSON columns (LONGTEXT with
	// a json_valid CHECK): the state column is declared JSON too, so that
	// JSON_OBJECT nests its value as JSON, as it does on the source.
	JSON map[string]bool
	// Joins are, per Children.Joins, the types of its state table.
	Joins []ChildJoinTypes
}

// checkChildren checks the children of p against the source schema (the
// parent table src, nil when it does not exist, and each child table) and
// returns their sink types.
// Every problem names its key and its fix.
func (p *Projection) checkChildren(read func(db, tbl string) (*sourceTable, error), src *sourceTable) ([]ChildTypes, []error, error) {
	var out []ChildTypes
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, c := range p.Children {
		ct := ChildTypes{State: map[string]string{}, Link: map[string]string{}, JSON: map[string]bool{}}
		out = append(out, ct)
		ck := fmt.Sprintf("projections.%s.children.%s", p.Name, c.Name)
		if c.fromBroken {
			continue // no child table to check against
		}
		var on []string
		for _, o := range c.On {
			on = append(on, o.Parent)
			if src == nil {
				continue // no parent table: SourceColumns says so
			}
			if ok, cols := src.has(o.Parent); !ok {
				bad("%s.on.%s: parent column %q does not exist in %s.%s%s: name the parent's primary key column", ck, o.Child, o.Parent, p.SourceDB, p.SourceTbl, cols)
			}
		}
		var missing []string
		if src != nil {
			for _, pk := range src.pk {
				if !slices.Contains(on, pk) {
					missing = append(missing, pk)
				}
			}
		}
		if len(missing) > 0 && !c.onBroken {
			bad("%s.on names parent column(s) %v, but %s.%s's primary key is %v: map a child column to each of %v, so each child belongs to at most one parent row", ck, on, p.SourceDB, p.SourceTbl, src.pk, missing)
		}
		child, err := read(c.SourceDB, c.SourceTbl)
		if err != nil {
			return out, errs, err
		}
		if child == nil {
			bad("%s.from: %s.%s does not exist on the source: correct from, create the table, or grant the source user SELECT on it", ck, c.SourceDB, c.SourceTbl)
			continue
		}
		if len(child.pk) == 0 {
			bad("%s.from: %s.%s has no primary key: readside cannot tell its rows apart; add a primary key to the child table, or name its unique NOT NULL columns in source.keys", ck, c.SourceDB, c.SourceTbl)
			continue
		}
		c.SetSourceKey(child.pk)
		if !slices.Equal(c.SourceKey(), child.pk) {
			bad("%s.from: %s.%s's primary key is now %v, not %v as when readside started: restart readside", ck, c.SourceDB, c.SourceTbl, child.pk, c.SourceKey())
		}
		has := func(what, col string) bool {
			ok, cols := child.has(col)
			if !ok {
				bad("%s: column %q does not exist in %s.%s%s: %s", ck+what, col, c.SourceDB, c.SourceTbl, cols, "name one of its columns")
			}
			return ok
		}
		for _, o := range c.On {
			if has(".on."+o.Child, o.Child) {
				ct.Link[o.Child] = child.types[o.Child] + " NOT NULL"
				if src == nil || !slices.Contains(src.pk, o.Parent) {
					continue // not the parent's key: refused above
				}
				if key, ok := src.types[o.Parent]; ok {
					if err := linkTypeError(ck+".on."+o.Child, c.SourceDB+"."+c.SourceTbl, o.Child, child.types[o.Child], p.SourceDB+"."+p.SourceTbl, o.Parent, key, linkCompared); err != nil {
						errs = append(errs, err)
					}
				}
			}
		}
		var joinMembers []string
		for _, m := range c.Members() {
			if m.Join != nil {
				joinMembers = append(joinMembers, m.Name)
			}
		}
		for k, o := range c.OrderBy {
			if c.OrderJoin(o) != nil {
				continue
			}
			if ok, cols := child.has(o); !ok {
				fix := "name one of its columns"
				if len(joinMembers) > 0 {
					fix += ", or a member of its join: " + strings.Join(joinMembers, ", ")
				}
				bad("%s.order_by[%d]: column %q does not exist in %s.%s%s: %s", ck, k, o, c.SourceDB, c.SourceTbl, cols, fix)
			}
		}
		jt, jerrs, err := checkChildJoins(read, p, c, ck, child)
		if err != nil {
			return out, errs, err
		}
		errs = append(errs, jerrs...)
		out[len(out)-1].Joins = jt
		for _, m := range c.Columns {
			if has(".columns."+m.Name, m.Source) && binaryColumn(child.types[m.Source]) {
				bad("%s.columns.%s: %s.%s.%s is %s, binary: MariaDB's JSON_OBJECT writes its bytes unescaped, which is no JSON; leave it out, or nest a text column holding it (e.g. a generated HEX(%s) column)",
					ck, m.Name, c.SourceDB, c.SourceTbl, m.Source, child.types[m.Source], m.Source)
			}
		}
		for _, col := range c.StateColumns() {
			if _, ok := child.types[col]; ok {
				ct.State[col] = child.def(col, true)
				ct.JSON[col] = child.json[col]
			}
		}
		members := map[string]string{}
		for _, m := range c.Members() {
			if m.Join == nil {
				members[m.Name] = child.types[m.Source]
			} else if k := slices.Index(c.Joins, m.Join); k < len(jt) {
				members[m.Name] = jt[k].State[m.Name]
			}
		}
		c.setUTF8Members(members)
	}
	return out, errs, nil
}

// binaryColumn reports a column type whose values are bytes rather than
// characters (COLUMN_TYPE, as information_schema writes it).
func binaryColumn(typ string) bool {
	t := strings.ToLower(typ)
	for _, b := range []string{"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "bit", "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection"} {
		if t == b || strings.HasPrefix(t, b+"(") {
			return true
		}
	}
	return false
}

// readJSONColumns marks t's MariaDB JSON columns: LONGTEXT with a
// json_valid CHECK, which is what MariaDB's JSON type is, and how its JSON
// functions tell a JSON column from text.
func readJSONColumns(ctx context.Context, db *sql.DB, schema, table string, t *sourceTable) error {
	if t == nil {
		return nil
	}
	t.json = map[string]bool{}
	text := false
	for _, typ := range t.types {
		text = text || strings.HasPrefix(typ, "longtext")
	}
	if !text {
		return nil // MariaDB reports its JSON columns as longtext
	}
	rows, err := db.QueryContext(ctx, `SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ?`, schema, table)
	var me *driver.MySQLError
	if errors.As(err, &me) && (me.Number == 1054 || me.Number == 1109) {
		// MySQL: no TABLE_NAME there (or no such view before 8.0.16), and
		// its JSON columns are of type json, not longtext.
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the check constraints of %s.%s: %w", schema, table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var clause string
		if err := rows.Scan(&clause); err != nil {
			return err
		}
		for col := range t.types {
			if strings.EqualFold(strings.ReplaceAll(clause, " ", ""), "json_valid(`"+strings.ReplaceAll(col, "`", "``")+"`)") {
				t.json[col] = true
			}
		}
	}
	return rows.Err()
}
