package benchio

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Settle is what SettleInnoDB found and how long it waited.
type Settle struct {
	Stage         string  `json:"stage"`
	Seconds       float64 `json:"seconds"`
	DirtyPages    int64   `json:"dirty_pages_before"`
	HistoryLength int64   `json:"history_length_before"`
	CheckpointAge int64   `json:"checkpoint_age_before"`
	// Settled is false when the limit ran out first: the stage then
	// starts with the server still flushing or purging.
	Settled bool `json:"settled"`
}

// The server counts as settled with at most this many dirty pages and
// this many undo log records left to purge: a latency step's own writes
// dirty about that many pages in a fraction of a second.
const (
	settledDirtyPages    = 256
	settledHistoryLength = 1000
)

// SettleInnoDB waits, for at most limit, until InnoDB has written its dirty
// pages and purged its undo history, so that the next measurement does not
// pay for the writes of the one before it.
//
// Why: MariaDB flushes dirty pages in the background at innodb_io_capacity
// (200 pages/s by default) and, when the redo log fills, in a hurry. In a
// full `make bench` the end-to-end step ran after nine workloads had written
// millions of rows; InnoDB's checkpoint age sat at 92–106 MB of its 128 MB
// redo log through the latency steps, and the sink's batches took 29 ms for
// 521 rows where a fresh test bed took 17–22 ms for ~450 (bench/results/history/tuning-log.md,
// entry 36). A stage should measure its own work, not the flushing
// debt of the stage before.
//
// How: innodb_max_dirty_pages_pct = 0 makes the page cleaner flush every
// dirty page, and a high innodb_io_capacity lets it do so at the disk's
// speed rather than 200 pages/s; both are set back before returning, so the
// measurement runs with the server's own settings. It needs the SUPER (or
// SYSTEM_VARIABLES_ADMIN) privilege; without it the error says so and the
// caller goes on unsettled.
func SettleInnoDB(ctx context.Context, db *sql.DB, stage string, limit time.Duration) (s Settle, err error) {
	s.Stage = stage
	t0 := time.Now()
	defer func() { s.Seconds = time.Since(t0).Seconds() }()
	dirty, history, age, err := innodbDebt(ctx, db)
	if err != nil {
		return s, err
	}
	s.DirtyPages, s.HistoryLength, s.CheckpointAge = dirty, history, age
	if dirty <= settledDirtyPages && history <= settledHistoryLength {
		s.Settled = true
		return s, nil
	}
	var capacity, capacityMax int64
	var pct, lwm float64
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_io_capacity, @@GLOBAL.innodb_io_capacity_max, @@GLOBAL.innodb_max_dirty_pages_pct, @@GLOBAL.innodb_max_dirty_pages_pct_lwm").
		Scan(&capacity, &capacityMax, &pct, &lwm); err != nil {
		return s, fmt.Errorf("reading InnoDB's flushing settings: %w", err)
	}
	// io_capacity may not exceed io_capacity_max, and the low-water mark
	// may not exceed the dirty page limit: raise max first, lower lwm first,
	// and undo in the reverse order.
	restore := []string{
		fmt.Sprintf("SET GLOBAL innodb_max_dirty_pages_pct = %g", pct),
		fmt.Sprintf("SET GLOBAL innodb_max_dirty_pages_pct_lwm = %g", lwm),
		fmt.Sprintf("SET GLOBAL innodb_io_capacity = %d", capacity),
		fmt.Sprintf("SET GLOBAL innodb_io_capacity_max = %d", capacityMax),
	}
	defer func() {
		for _, q := range restore {
			if _, rerr := db.ExecContext(context.WithoutCancel(ctx), q); rerr != nil && err == nil {
				err = fmt.Errorf("restoring InnoDB's flushing settings (%s): %w", q, rerr)
			}
		}
	}()
	for _, q := range []string{
		"SET GLOBAL innodb_io_capacity_max = 100000",
		"SET GLOBAL innodb_io_capacity = 50000",
		"SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0",
		"SET GLOBAL innodb_max_dirty_pages_pct = 0",
	} {
		if _, err = db.ExecContext(ctx, q); err != nil {
			return s, fmt.Errorf("letting InnoDB flush before %s (%s; the bench's MariaDB user needs SUPER): %w", stage, q, err)
		}
	}
	deadline := t0.Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if dirty, history, _, err = innodbDebt(ctx, db); err != nil {
			return s, err
		}
		if dirty <= settledDirtyPages && history <= settledHistoryLength {
			s.Settled = true
			return s, nil
		}
	}
	return s, nil
}

// innodbDebt reads the buffer pool's dirty pages, the undo records waiting
// for purge and the checkpoint age (redo bytes not yet covered by flushed
// pages).
func innodbDebt(ctx context.Context, db *sql.DB) (dirty, history, age int64, err error) {
	rows, err := db.QueryContext(ctx, "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('INNODB_BUFFER_POOL_PAGES_DIRTY', 'INNODB_HISTORY_LIST_LENGTH', 'INNODB_CHECKPOINT_AGE')")
	if err != nil {
		return 0, 0, 0, fmt.Errorf("reading InnoDB's status: %w", err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			return 0, 0, 0, err
		}
		switch name {
		case "INNODB_BUFFER_POOL_PAGES_DIRTY":
			dirty = v
		case "INNODB_HISTORY_LIST_LENGTH":
			history = v
		case "INNODB_CHECKPOINT_AGE":
			age = v
		}
		seen++
	}
	if err := rows.Err(); err != nil {
		return 0, 0, 0, err
	}
	if seen < 3 {
		return 0, 0, 0, fmt.Errorf("InnoDB's status has %d of Innodb_buffer_pool_pages_dirty, Innodb_history_list_length and Innodb_checkpoint_age (MariaDB 10.5+ has all three)", seen)
	}
	return dirty, history, age, nil
}
