package sinks

import (
	"fmt"
	"strconv"

	"github.com/readside/readside/projections"
)

// plannedAggregateColumns are the columns aggregateDDL gives an aggregate
// projection's read table.
func plannedAggregateColumns(p *projections.Projection, types projections.Types) []Column {
	var out []Column
	for _, c := range p.Columns {
		def := types.Read[c.Name]
		if g, ok := types.GroupRead[c.Name]; ok {
			def = g
		}
		col := parseDef(c.Name, def)
		col.Key, col.Groups = true, true
		out = append(out, col)
	}
	var hidden []Column
	for _, a := range p.Aggregation.Aggregates {
		col := parseDef(a.Column, types.Read[a.Column])
		col.Comment = "readside: " + a.Text
		out = append(out, col)
		if sums(a) {
			hidden = append(hidden, Column{Name: projections.NonNullColumn(a.Column), Type: "bigint", Default: "0", HasDefault: true,
				Comment: "readside: non-NULL values in " + a.Column})
		}
		if a.Func == projections.AggAvg {
			col := parseDef(projections.AvgSumColumn(a.Column), types.Read[projections.AvgSumColumn(a.Column)])
			col.Comment = "readside: sum of the values in " + a.Column
			hidden = append(hidden, col)
		}
	}
	out = append(out, hidden...)
	if !joinedAgg(p) {
		out = append(out, plannedJoinColumns(p, types)...)
	}
	return append(out,
		Column{Name: projections.RowsColumn, Type: "bigint", Default: "0", HasDefault: true, Comment: "readside: source rows in the group"},
		Column{Name: "_rs_version", Type: "bigint unsigned", Default: "0", HasDefault: true, Comment: "readside: newest source version applied to the group"})
}

// plannedContributionColumns are the columns aggregateDDL gives an
// aggregate projection's contributions table.
func plannedContributionColumns(p *projections.Projection, types projections.Types) plannedTable {
	t := plannedTable{name: p.ContributionsTable(), read: map[string]string{}}
	t.columns = append(t.columns,
		Column{Name: "key_text", Type: "varbinary(" + strconv.Itoa(projections.MaxSourceKeyBytes) + ")", Key: true, Comment: "readside: the source primary key (event key)"},
		Column{Name: "_rs_version", Type: "bigint unsigned", Comment: "readside: version of the source row (0: never seen); NULL group: it adds nothing"})
	for _, c := range p.Columns {
		name := projections.GroupColumn(c.Name)
		t.columns = append(t.columns, parseDef(name, nullable(types.Read[c.Name])))
		t.read[name] = c.Name
	}
	for _, a := range p.Aggregation.Aggregates {
		if !a.Stored() {
			continue
		}
		name := projections.ContributionColumn(a.Column)
		def := types.Contribution[a.Column]
		col := parseDef(name, def)
		if a.Counts() {
			col = Column{Name: name, Type: "tinyint unsigned", Default: "0", HasDefault: true}
		}
		t.columns = append(t.columns, col)
		t.read[name] = a.Column
	}
	for i, j := range p.Joins {
		if j.Via != nil || !joinedAgg(p) || i >= len(types.JoinKey) {
			continue
		}
		for _, o := range j.On {
			col := parseDef(o.Read, nullable(types.KeptLinkType(i, o.Parent)))
			col.Comment = fmt.Sprintf("readside: the row's %s, its link to %s.%s", o.Child, j.ParentDB, j.ParentTbl)
			t.columns = append(t.columns, col)
		}
	}
	return t
}

// aggregateTables are an aggregate projection's planned tables.
func aggregateTables(p *projections.Projection, types projections.Types) []plannedTable {
	out := append([]plannedTable{{name: p.Table, columns: plannedAggregateColumns(p, types)}, plannedContributionColumns(p, types)}, plannedDistinctTables(p, types)...)
	return append(out, plannedJoinTables(p, types)...)
}
