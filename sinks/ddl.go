package sinks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
)

// bookkeeping tables, one set per sink database (per shard).
var bookkeeping = []string{
	"CREATE TABLE IF NOT EXISTS `_readside_offsets` (projection " + nameCol + " NOT NULL, topic " + topicCol + " NOT NULL, part INT NOT NULL, next_offset BIGINT NOT NULL, updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), PRIMARY KEY (projection, topic, part))",
	"CREATE TABLE IF NOT EXISTS `_readside_tombstones` (projection " + nameCol + " NOT NULL, key_text VARBINARY(2048) NOT NULL, version BIGINT UNSIGNED NOT NULL, PRIMARY KEY (projection, key_text))",
	"CREATE TABLE IF NOT EXISTS `_readside_truncations` (projection " + nameCol + " NOT NULL PRIMARY KEY, version BIGINT UNSIGNED NOT NULL)",
	// Offset resets asked for by `readside replay`, consumed by the
	// projector that is assigned the partition (sinks/replay.go).
	"CREATE TABLE IF NOT EXISTS `_readside_replay_requests` (projection " + nameCol + " NOT NULL, topic " + topicCol + " NOT NULL, part INT NOT NULL, next_offset BIGINT NOT NULL, requested_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (projection, topic, part))",
	// The applied source position per projection, topic and partition,
	// committed with the rows: an application reads its own writes by
	// comparing a GTID or version it wrote with these (see also /wait).
	"CREATE TABLE IF NOT EXISTS `_readside_watermarks` (projection " + nameCol + " NOT NULL, topic " + topicCol + " NOT NULL, part INT NOT NULL, gtid VARCHAR(255) NOT NULL DEFAULT '', version BIGINT UNSIGNED NOT NULL, source_ts BIGINT NOT NULL, applied_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), PRIMARY KEY (projection, topic, part))",
	// The state of `readside replay --rebuild`, so a crashed rebuild resumes.
	"CREATE TABLE IF NOT EXISTS `_readside_rebuilds` (projection " + nameCol + " NOT NULL PRIMARY KEY, phase VARCHAR(20) NOT NULL, started_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6))",
	// The routing generation of each projection: which sink serves it
	// (routing.go). No row is generation 0, the sink the config names.
	routingDDL,
	frontierDDL,
	frontierProjectionsDDL,
}

// routingDDL creates `_readside_routing`: the generation every live apply
// transaction checks under a share lock, and the sink (and its ranges) a
// reshard's cutover recorded for that generation.
const routingDDL = "CREATE TABLE IF NOT EXISTS `_readside_routing` (projection " + nameCol + " NOT NULL PRIMARY KEY, generation BIGINT UNSIGNED NOT NULL, sink " + nameCol + " NOT NULL, ranges TEXT NOT NULL, replicated BOOLEAN NOT NULL DEFAULT FALSE, updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6))"

// Bookkeeping is the DDL of readside's own tables on a sink.
func Bookkeeping() []string { return append([]string{}, bookkeeping...) }

// stateKey and stateCol name a join state table's columns: the parent's
// key columns and the copied columns (by read column name), prefixed so
// the two can never collide.
func stateKey(parentCol string) string { return "k_" + parentCol }
func stateCol(readCol string) string   { return "c_" + readCol }

// stateVersionComment is the comment on a join state table's _rs_version.
const stateVersionComment = "readside: version of the parent row (0: never seen); NULL columns: no such parent row"

// truncationName is the `_readside_truncations` row of a join's parent.
func truncationName(p *projections.Projection, j *projections.Join) string {
	return fmt.Sprintf("%s#join%d", p.Name, j.N)
}

// DDL returns the statements that create p's read table, the state table
// of each join, the state and link tables of each children entry, and
// readside's bookkeeping tables. types comes from
// Projection.SourceColumns.
func DDL(p *projections.Projection, types projections.Types) []string {
	if p.Aggregation != nil {
		return aggregateDDL(p, types)
	}
	var defs []string
	for _, c := range p.Columns {
		// Key columns are NOT NULL already: SourceColumns declares them
		// so (the where filter keeps NULL out of nullable ones).
		defs = append(defs, q(c.Name)+" "+types.Read[c.Name])
	}
	defs = append(defs, joinColumnDefs(p, types)...)
	var key []string
	for _, k := range p.Key {
		key = append(key, q(k))
	}
	var childIndexes []string
	for _, c := range p.Children {
		cols, index := childReadDefs(c, key)
		defs = append(defs, cols...)
		if index != "" {
			childIndexes = append(childIndexes, index)
		}
	}
	defs = append(defs, "`_rs_version` BIGINT UNSIGNED NOT NULL COMMENT 'readside: source version of this row'",
		"PRIMARY KEY ("+strings.Join(key, ", ")+")")
	defs = append(defs, joinIndexDefs(p, key)...)
	defs = append(defs, childIndexes...)
	out := append([]string{}, bookkeeping...)
	out = append(out, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n  %s\n) COMMENT=%s",
		q(p.Table), strings.Join(defs, ",\n  "), sqlquote.Literal(fmt.Sprintf("readside projection %s from %s.%s", p.Name, p.SourceDB, p.SourceTbl))))
	out = append(out, joinStateDDL(p, types)...)
	for i := range p.Children {
		out = append(out, childDDL(p, i, types)...)
	}
	return out
}

// joinColumnDefs are the read columns p's joins fill, and their versions.
func joinColumnDefs(p *projections.Projection, types projections.Types) []string {
	var defs []string
	for _, j := range p.Joins {
		for _, c := range j.Columns {
			defs = append(defs, fmt.Sprintf("%s %s COMMENT %s", q(c.Name), types.Read[c.Name], sqlquote.Literal(fmt.Sprintf("readside: %s.%s.%s via join %d", j.ParentDB, j.ParentTbl, c.Source, j.N))))
		}
		defs = append(defs, fmt.Sprintf("%s BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT %s", q(j.VersionColumn()), sqlquote.Literal(fmt.Sprintf("readside: version of the %s.%s row shown", j.ParentDB, j.ParentTbl))))
	}
	return defs
}

// joinIndexDefs index the join columns of the read table (quoted primary
// key key): fan-out finds a parent's children by them, unless they
// already lead the primary key.
func joinIndexDefs(p *projections.Projection, key []string) []string {
	var defs []string
	for _, j := range p.Joins {
		var fk []string
		for _, on := range j.On {
			fk = append(fk, q(on.Read))
		}
		if !slices.Equal(fk, key[:min(len(fk), len(key))]) {
			defs = append(defs, fmt.Sprintf("KEY `_rs_join%d` (%s)", j.N, strings.Join(fk, ", ")))
		}
	}
	return defs
}

// joinStateDDL creates the state table of each of p's joins.
func joinStateDDL(p *projections.Projection, types projections.Types) []string {
	var out []string
	for i, j := range p.Joins {
		sdefs, skey := stateKeyDefs(j, types.JoinKey[i])
		for _, c := range j.Columns {
			sdefs = append(sdefs, q(stateCol(c.Name))+" "+types.Read[c.Name])
		}
		sdefs = append(sdefs, "`_rs_version` BIGINT UNSIGNED NOT NULL COMMENT "+sqlquote.Literal(stateVersionComment),
			"PRIMARY KEY ("+strings.Join(skey, ", ")+")")
		sdefs = append(sdefs, joinedStateIndexDefs(p, j)...)
		out = append(out, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n  %s\n) COMMENT=%s",
			q(j.StateTable(p)), strings.Join(sdefs, ",\n  "), sqlquote.Literal(fmt.Sprintf("readside join state: latest %s.%s rows for projection %s", j.ParentDB, j.ParentTbl, p.Name))))
		if p.FanOut == projections.FanOutBackground {
			out = append(out, pendingDDL(p, j, types.JoinKey[i]))
		}
	}
	return out
}

// stateKeyDefs are the definitions and quoted names of join j's parent key
// columns in its state and pending tables (keyTypes: their types).
func stateKeyDefs(j *projections.Join, keyTypes map[string]string) (defs, key []string) {
	for _, on := range j.On {
		defs = append(defs, q(stateKey(on.Parent))+" "+keyTypes[on.Parent])
		key = append(key, q(stateKey(on.Parent)))
	}
	return defs, key
}
