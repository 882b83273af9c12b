package main

import (
	"context"
	"database/sql"
	"time"
)

// upsertTable is one source table a workload writes with multi-row
// INSERT … ON DUPLICATE KEY UPDATE statements: head and tail around the
// rows, and row appending one row's VALUES tuple.
type upsertTable struct {
	head, tail string
	row        func(b []byte, id, us int64) []byte
}

// preload writes rows 1..n in statements of 1,000 rows.
func (t upsertTable) preload(ctx context.Context, db *sql.DB, n int64) error {
	for lo := int64(1); lo <= n; lo += 1000 {
		b := []byte(t.head)
		for id := lo; id < min(lo+1000, n+1); id++ {
			if id > lo {
				b = append(b, ',')
			}
			b = t.row(b, id, time.Now().UnixMicro())
		}
		if _, err := db.ExecContext(ctx, string(append(b, t.tail...))); err != nil {
			return err
		}
	}
	return nil
}

// upsertBatch gathers one source transaction's rows per table: one
// statement per table that has rows.
type upsertBatch struct {
	tables []upsertTable
	stmts  [][]byte
	rows   []int
}

func newUpsertBatch(tables []upsertTable) *upsertBatch {
	return &upsertBatch{tables: tables, stmts: make([][]byte, len(tables)), rows: make([]int, len(tables))}
}

func (b *upsertBatch) add(table int, id, us int64) {
	if b.rows[table] == 0 {
		b.stmts[table] = []byte(b.tables[table].head)
	} else {
		b.stmts[table] = append(b.stmts[table], ',')
	}
	b.stmts[table] = b.tables[table].row(b.stmts[table], id, us)
	b.rows[table]++
}

// commit writes the batch in one transaction and adds its row counts to
// counts (per table).
func (b *upsertBatch) commit(ctx context.Context, db *sql.DB, counts []int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for i, stmt := range b.stmts {
		if b.rows[i] == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, string(append(stmt, b.tables[i].tail...))); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	for i, n := range b.rows {
		counts[i] += n
	}
	return nil
}

// empty reports whether nothing was added yet.
func (b *upsertBatch) empty() bool {
	for _, n := range b.rows {
		if n > 0 {
			return false
		}
	}
	return true
}

// upsertBacklog writes w.Events row changes in source transactions of
// about w.TxnRows rows, pick adding each change (one row or more) to the
// transaction's batch, and returns the rows written per table.
func upsertBacklog(ctx context.Context, db *sql.DB, w workload, tables []upsertTable, pick func(batch *upsertBatch, us int64)) ([]int, error) {
	counts := make([]int, len(tables))
	for done := 0; done < w.Events; {
		n, err := upsertTxnRows(ctx, db, tables, min(w.TxnRows, w.Events-done), time.Now().UnixMicro(), pick, counts)
		if err != nil {
			return counts, err
		}
		done += n
	}
	return counts, nil
}

// upsertTxnRows writes one source transaction of at least n rows stamped
// us, pick adding each change, adds its rows per table to counts and
// returns how many it wrote.
func upsertTxnRows(ctx context.Context, db *sql.DB, tables []upsertTable, n int, us int64, pick func(batch *upsertBatch, us int64), counts []int) (int, error) {
	batch := newUpsertBatch(tables)
	rows := 0
	for rows < n {
		pick(batch, us)
		rows = 0
		for _, r := range batch.rows {
			rows += r
		}
	}
	return rows, batch.commit(ctx, db, counts)
}

// upsertLive is a txnWriter of the transactions upsertTxnRows writes.
func upsertLive(db *sql.DB, tables []upsertTable, pick func(batch *upsertBatch, us int64)) txnWriter {
	return func(ctx context.Context, n int, us int64) (int, error) {
		return upsertTxnRows(ctx, db, tables, n, us, pick, make([]int, len(tables)))
	}
}
