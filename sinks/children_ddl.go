package sinks

// The tables of a projection's nested children: the two read columns of
// each children entry (DDL adds them to the read table), its state table
// (one row per child primary key) and its link table (one lock row per
// parent link), as DDL creates them and drift plans them.

import (
	"fmt"
	"hash/crc32"
	"slices"
	"strings"

	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
)

// childLinkCol names a link table's column of child column col.
func childLinkCol(col string) string {
	return "l_" + strings.TrimPrefix(projections.ChildStateColumn(col), "c_")
}

const (
	childKeyComment     = "readside: the child row's primary key (its record key)"
	childVersionComment = "readside: version of the child row (NULL link: deleted or no parent)"
)

// childReadColumns are the read table's columns of children entry c.
func childReadColumns(c *projections.Children) []Column {
	return []Column{
		{Name: c.Name, Type: "longtext", Charset: "utf8mb4", Collation: "utf8mb4_bin", Nullable: true,
			Comment: fmt.Sprintf("readside: %s.%s rows as a JSON array", c.SourceDB, c.SourceTbl)},
		{Name: c.CountColumn, Type: "bigint", Default: "0", HasDefault: true,
			Comment: fmt.Sprintf("readside: how many %s.%s rows (the array holds at most limit)", c.SourceDB, c.SourceTbl)},
	}
}

// childReadDefs are the read table's column definitions and index of
// children entry c; key are the read table's primary key columns, quoted.
func childReadDefs(c *projections.Children, key []string) (cols []string, index string) {
	rc := childReadColumns(c)
	cols = []string{
		// Not MariaDB's JSON (its json_valid CHECK): the array is the text
		// JSON_ARRAYAGG makes, equal to the source's, and MariaDB renders
		// some values as no valid JSON (YEAR 0 as 0000).
		q(c.Name) + " " + rc[0].Definition(),
		q(c.CountColumn) + " BIGINT NOT NULL DEFAULT 0 COMMENT " + sqlquote.Literal(rc[1].Comment),
	}
	// The refresh finds a parent's read rows by its link columns: index
	// them unless they already lead the primary key.
	var link []string
	for _, on := range c.On {
		link = append(link, q(on.Read))
	}
	if !slices.Equal(link, key[:min(len(link), len(key))]) {
		index = fmt.Sprintf("KEY %s (%s)", q(childIndexName(c)), strings.Join(link, ", "))
	}
	return cols, index
}

func childIndexName(c *projections.Children) string {
	name := "_rs_child_" + c.Name
	if len(name) > 64 {
		name = fmt.Sprintf("_rs_child_%08x", crc32.ChecksumIEEE([]byte(c.Name)))
	}
	return name
}

// childDDL is the state and link tables of p.Children[i].
func childDDL(p *projections.Projection, i int, types projections.Types) []string {
	c := p.Children[i]
	state := PlannedChildStateColumns(p, i, types)
	var defs []string
	json := map[string]bool{}
	if i < len(types.Children) {
		for col, is := range types.Children[i].JSON {
			json[projections.ChildStateColumn(col)] = is
		}
	}
	for _, col := range state {
		if json[col.Name] {
			// MariaDB's JSON (what information_schema reports as the
			// planned LONGTEXT utf8mb4_bin, with a json_valid CHECK).
			defs = append(defs, q(col.Name)+" JSON NULL")
			continue
		}
		defs = append(defs, q(col.Name)+" "+col.Definition())
	}
	var index []string
	for _, col := range c.On {
		index = append(index, q(projections.ChildStateColumn(col.Child)))
	}
	// The link index goes on in the array's order as far as its columns
	// can be key parts: a TEXT, BLOB or JSON one (a child keyed by a
	// prefix of a TEXT column, an order_by over one) or one that takes
	// the key past what InnoDB indexes ends it, as a joined column does.
	width := 0
	for _, col := range state {
		if slices.Contains(index, q(col.Name)) {
			n, _ := projections.KeyPartBytes(col.Definition())
			width += n
		}
	}
	for _, col := range append(slices.Clone(c.OrderBy), c.SourceKey()...) {
		if c.OrderJoin(col) != nil {
			break // the rest of the order is not in this table
		}
		s := q(projections.ChildStateColumn(col))
		if slices.Contains(index, s) {
			continue
		}
		at := slices.IndexFunc(state, func(sc Column) bool { return q(sc.Name) == s })
		if at < 0 || json[state[at].Name] {
			break
		}
		n, ok := projections.KeyPartBytes(state[at].Definition())
		if !ok || width+n > projections.MaxIndexBytes {
			break
		}
		width += n
		index = append(index, s)
	}
	defs = append(defs, "PRIMARY KEY (`_rs_key`)", "KEY `_rs_link` ("+strings.Join(index, ", ")+")")
	// A change of a join's parent finds the child rows below it by the
	// child columns the join's on names.
	for _, j := range c.Joins {
		if j.Via != nil {
			continue
		}
		var cols []string
		for _, on := range j.On {
			cols = append(cols, q(projections.ChildStateColumn(on.Child)))
		}
		defs = append(defs, fmt.Sprintf("KEY `_rs_join%d` (%s)", j.N, strings.Join(cols, ", ")))
	}
	var ldefs, lkey []string
	for _, col := range PlannedChildLinkColumns(p, i, types) {
		ldefs = append(ldefs, q(col.Name)+" "+col.Definition())
		lkey = append(lkey, q(col.Name))
	}
	ldefs = append(ldefs, "PRIMARY KEY ("+strings.Join(lkey, ", ")+")")
	out := []string{
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n  %s\n) COMMENT=%s", q(c.StateTable(p)), strings.Join(defs, ",\n  "),
			sqlquote.Literal(fmt.Sprintf("readside children state: latest %s.%s rows for projection %s.%s", c.SourceDB, c.SourceTbl, p.Name, c.Name))),
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n  %s\n) COMMENT=%s", q(c.LinkTable(p)), strings.Join(ldefs, ",\n  "),
			sqlquote.Literal(fmt.Sprintf("readside children links: a lock row per parent of projection %s.%s", p.Name, c.Name))),
	}
	for k := range c.Joins {
		out = append(out, childJoinDDL(p, i, k, types))
	}
	return out
}

// childJoinDDL is the state table of join k of p.Children[i]: the
// parent's key, the columns the elements (and the joins hanging off it)
// take, and the parent row's version; indexed by the columns the joins
// hanging off it find their parents by.
func childJoinDDL(p *projections.Projection, i, k int, types projections.Types) string {
	c := p.Children[i]
	j := c.Joins[k]
	var json map[string]bool
	if i < len(types.Children) && k < len(types.Children[i].Joins) {
		json = types.Children[i].Joins[k].JSON
	}
	var defs, key []string
	for _, col := range PlannedChildJoinColumns(p, i, k, types) {
		if col.Key {
			key = append(key, q(col.Name))
		}
		if json[strings.TrimPrefix(col.Name, "c_")] && strings.HasPrefix(col.Name, "c_") {
			defs = append(defs, q(col.Name)+" JSON NULL")
			continue
		}
		defs = append(defs, q(col.Name)+" "+col.Definition())
	}
	defs = append(defs, "PRIMARY KEY ("+strings.Join(key, ", ")+")")
	for _, d := range c.JoinDependents(j) {
		var cols []string
		for _, on := range d.On {
			cols = append(cols, q(stateCol(on.Read)))
		}
		defs = append(defs, fmt.Sprintf("KEY `_rs_join%d` (%s)", d.N, strings.Join(cols, ", ")))
	}
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n  %s\n) COMMENT=%s", q(c.JoinStateTable(p, j)), strings.Join(defs, ",\n  "),
		sqlquote.Literal(fmt.Sprintf("readside children join state: latest %s.%s rows for projection %s.%s", j.ParentDB, j.ParentTbl, p.Name, c.Name)))
}

// PlannedChildJoinColumns are the columns of the state table of join k
// of p.Children[i].
func PlannedChildJoinColumns(p *projections.Projection, i, k int, types projections.Types) []Column {
	j := p.Children[i].Joins[k]
	var jt projections.ChildJoinTypes
	if i < len(types.Children) && k < len(types.Children[i].Joins) {
		jt = types.Children[i].Joins[k]
	}
	var out []Column
	for _, on := range j.On {
		col := parseDef(stateKey(on.Parent), jt.Key[on.Parent])
		col.Key = true
		out = append(out, col)
	}
	for _, c := range j.Columns {
		out = append(out, parseDef(stateCol(c.Name), jt.State[c.Name]))
	}
	return append(out, Column{Name: "_rs_version", Type: "bigint unsigned", Comment: stateVersionComment})
}

// PlannedChildStateColumns are the columns DDL gives the state table of
// p.Children[i]: the child's key text, its StateColumns (typed like the
// child's columns, NULL-able) and its version.
func PlannedChildStateColumns(p *projections.Projection, i int, types projections.Types) []Column {
	c := p.Children[i]
	out := []Column{{Name: "_rs_key", Type: "varbinary(2048)", Key: true, Comment: childKeyComment}}
	for _, col := range c.StateColumns() {
		def := ""
		if i < len(types.Children) {
			def = types.Children[i].State[col]
		}
		out = append(out, parseDef(projections.ChildStateColumn(col), def))
	}
	return append(out, Column{Name: "_rs_version", Type: "bigint unsigned", Comment: childVersionComment})
}

// PlannedChildLinkColumns are the columns of p.Children[i]'s link table:
// the link, typed like the child's link columns.
func PlannedChildLinkColumns(p *projections.Projection, i int, types projections.Types) []Column {
	var out []Column
	for _, on := range p.Children[i].On {
		def := ""
		if i < len(types.Children) {
			def = types.Children[i].Link[on.Child]
		}
		col := parseDef(childLinkCol(on.Child), def)
		col.Key = true
		out = append(out, col)
	}
	return out
}

// childrenSink refuses children on a MySQL sink (mariadb false): MySQL's
// JSON_ARRAYAGG has no ORDER BY (nor LIMIT), so the array's order could
// not be the one declared.
func childrenSink(p *projections.Projection, mariadb bool) error {
	if len(p.Children) == 0 || mariadb {
		return nil
	}
	return fmt.Errorf("projection %s nests children (%s), which need a MariaDB sink: MySQL's JSON_ARRAYAGG cannot order or cap the array; put the projection on a MariaDB sink, or drop children and read the child rows with a join", p.Name, p.Children[0].Name)
}

// CheckChildren refuses p's children on a shard that is not MariaDB
// (`readside check`, and every projector start through CheckReadTable).
func (s *Sharded) CheckChildren(p *projections.Projection) error {
	for _, sh := range s.Shards {
		if err := childrenSink(p, sh.mariadb); err != nil {
			return fmt.Errorf("shard %s: %w", sh.Range.Text, err)
		}
	}
	return nil
}
