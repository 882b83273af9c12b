package cdc

// Partition maintenance that moves rows without row events. MariaDB and
// MySQL carry out ALTER TABLE ... DROP PARTITION, TRUNCATE PARTITION,
// EXCHANGE PARTITION ... WITH TABLE and (MariaDB) CONVERT PARTITION ... TO
// TABLE / CONVERT TABLE ... TO PARTITION as a statement in the binlog, with
// no row images: the rows leave (or enter) the tables and nothing says
// which. Time-partitioned tables dropped by month for retention are the
// common case. readside cannot turn such a statement into deletes (it
// would need the rows), so it says so, once per statement on a captured
// table, and `check` names every partitioned captured table beforehand;
// `verify --repair` brings the read tables back to the source.
// ADD, REORGANIZE, COALESCE, REBUILD and the other partition clauses keep
// every row where it is and are not reported.

import (
	"context"
	"fmt"
	"strings"

	"github.com/readside/readside/config"
)

// partitionMoves returns the tables an ALTER TABLE's partition clause
// moves rows of without row events (toks: the statement's tokens, toks[2]
// the altered table), or nil.
func partitionMoves(toks []string, qualify func(string) string) []string {
	is := func(i int, word string) bool { return i < len(toks) && strings.EqualFold(toks[i], word) }
	for i := 3; i < len(toks); i++ {
		switch {
		case (is(i, "drop") || is(i, "truncate")) && is(i+1, "partition"):
			return []string{qualify(toks[2])}
		case is(i, "exchange") && is(i+1, "partition"):
			// EXCHANGE PARTITION p WITH TABLE t2: both tables' rows move.
			out := []string{qualify(toks[2])}
			for j := i + 2; j+1 < len(toks); j++ {
				if is(j, "table") {
					out = append(out, qualify(toks[j+1]))
					break
				}
			}
			return out
		case is(i, "convert") && is(i+1, "partition"):
			return []string{qualify(toks[2])}
		case is(i, "convert") && is(i+1, "table") && i+2 < len(toks):
			// CONVERT TABLE t2 TO PARTITION p: t2's rows join the table.
			return []string{qualify(toks[2]), qualify(toks[i+2])}
		}
	}
	return nil
}

// partitionMaintenance warns about st, a partition statement, for each
// captured table whose rows it moved without row events.
func (s *stream) partitionMaintenance(st statement, query, pos string) {
	for _, t := range st.tables {
		if _, ok := s.captured[t]; !ok {
			continue
		}
		s.t.log.Warn("partition maintenance moved rows of a captured table without row events: its topic and read tables keep rows the source no longer has, or lack rows it gained",
			"table", t, "statement", query, "position", pos,
			"fix", "readside verify --projection P --repair for each projection that reads "+t+" (readside snapshot --table "+t+" re-publishes the rows it holds now); "+
				"to keep the read tables exact without repairs, DELETE a partition's rows (binlogged) before dropping it")
	}
}

// partitionedQuery lists the captured tables that are partitioned, with
// their partitioning method (the placeholders are appended per table).
const partitionedQuery = `SELECT TABLE_SCHEMA, TABLE_NAME, MAX(PARTITION_METHOD), COUNT(*)
 FROM information_schema.PARTITIONS
 WHERE PARTITION_NAME IS NOT NULL AND (TABLE_SCHEMA, TABLE_NAME) IN (%s)
 GROUP BY TABLE_SCHEMA, TABLE_NAME ORDER BY TABLE_SCHEMA, TABLE_NAME`

// checkPartitions warns about every partitioned captured table: its
// partition maintenance bypasses the binlog's row events.
func (s *sourceDB) checkPartitions(ctx context.Context, cfg config.Config) []Finding {
	if len(cfg.Source.Tables) == 0 {
		return nil
	}
	var marks []string
	var args []any
	for _, t := range cfg.Source.Tables {
		db, tbl, _ := config.SplitTable(t)
		marks = append(marks, "(?, ?)")
		args = append(args, db, tbl)
	}
	rows, err := s.db.QueryContext(ctx, fmt.Sprintf(partitionedQuery, strings.Join(marks, ", ")), args...)
	if err != nil {
		return []Finding{{Severity: "warning", What: fmt.Sprintf("%v: partitioned captured tables cannot be listed", err),
			Fix: "grant the source user SELECT on the captured tables (information_schema shows only what it may read)"}}
	}
	defer rows.Close()
	var out []Finding
	for rows.Next() {
		var db, tbl, method string
		var parts int
		if err := rows.Scan(&db, &tbl, &method, &parts); err != nil {
			return append(out, Finding{Severity: "warning", What: err.Error()})
		}
		t := db + "." + tbl
		readers := readersOf(t, cfg.Projections)
		repair := "readside snapshot --table " + t + " after such maintenance (it re-publishes the rows the table holds; rows that left stay in the topic)"
		if len(readers) > 0 {
			repair = repairCommands(readers) + " after such maintenance, from the same job"
		}
		out = append(out, Finding{Severity: "warning",
			What: fmt.Sprintf("captured table %s is partitioned (%s, %d partitions): ALTER TABLE ... DROP PARTITION, TRUNCATE PARTITION, EXCHANGE PARTITION and CONVERT PARTITION move its rows "+
				"without row events, so readside never sees which: the read tables keep rows such a statement removed (the tailer logs a warning when one runs)", t, method, parts),
			Fix: "DELETE a partition's rows (binlogged) before dropping or truncating it; or " + repair})
	}
	return out
}
