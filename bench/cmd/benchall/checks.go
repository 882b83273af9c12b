package main

// The checks that a workload's limit or read table did the work it
// claims: the aggregate's B2 left the projector's group rows, the nested
// children count what the source joins (B2 with join statements has its
// own in stages.go).

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/readside/readside/bench/internal/benchio"
	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
)

// aggregateCheck compares the group rows rawupsert -aggregate left (its
// count and checksum) with the projector's read table.
func (e *env) aggregateCheck(ctx context.Context, cfg config.Config, proj *projections.Projection, b2 limitResult) (string, error) {
	d := cfg.Projections[proj.Name]
	cols := append([]string{}, d.GroupBy...)
	cols = append(cols, slices.Sorted(maps.Keys(d.Aggregates))...)
	rows, sum, err := benchio.TableChecksum(ctx, e.sink.DB(), proj.Table, cols)
	if err != nil {
		return "", err
	}
	if rows == b2.ReadRows && sum == b2.Checksum {
		return fmt.Sprintf("same group rows as the projector: %d rows, checksum %d", rows, sum), nil
	}
	msg := fmt.Sprintf("DIFFERENT group rows: the projector left %d rows (checksum %d), B2 %d (checksum %d)", rows, sum, b2.ReadRows, b2.Checksum)
	logf("warning: %s: %s", proj.Name, msg)
	return msg, nil
}

// childrenCheck compares, per children entry, the children the projector's
// read table counts (Σ <name>_count) and nests (Σ JSON_LENGTH(<name>))
// with the source's children of the parents there are (a join of the two
// tables; limit is never reached in the bench's workloads). Only rows the
// backlog wrote are readside's to know (no snapshot): a children
// workload preloads its rows with commit_us 0, so both sides of the join
// are the rows with commit_us > 0.
func (e *env) childrenCheck(ctx context.Context, proj *projections.Projection, d config.Projection) (string, error) {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(d.Children)) {
		c := d.Children[name]
		var on []string
		for _, child := range slices.Sorted(maps.Keys(c.On)) {
			on = append(on, fmt.Sprintf("c.`%s` = p.`%s`", child, c.On[child]))
		}
		var want, counted, nested int64
		if err := e.bed.MySQL.DB().QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s c JOIN %s p ON %s WHERE c.commit_us > 0 AND p.commit_us > 0", quoteTable(c.From), quoteTable(d.From), strings.Join(on, " AND "))).Scan(&want); err != nil {
			return "", err
		}
		if err := e.sink.DB().QueryRowContext(ctx, fmt.Sprintf("SELECT COALESCE(SUM(`%s_count`), 0), COALESCE(SUM(JSON_LENGTH(`%s`)), 0) FROM `%s`", name, name, proj.Table)).Scan(&counted, &nested); err != nil {
			return "", err
		}
		if counted == want && nested == want {
			out = append(out, fmt.Sprintf("%s: %d children counted and nested, as the source joins them", name, want))
			continue
		}
		msg := fmt.Sprintf("%s: DIFFERENT: the source joins %d children to their parents, the read table counts %d and nests %d", name, want, counted, nested)
		logf("warning: %s: %s", proj.Name, msg)
		out = append(out, msg)
	}
	return strings.Join(out, "; "), nil
}

// quoteTable quotes a config's db.table.
func quoteTable(dbTable string) string {
	db, tbl, _ := strings.Cut(dbTable, ".")
	return "`" + db + "`.`" + tbl + "`"
}
