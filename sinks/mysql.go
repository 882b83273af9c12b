// Package sinks writes projected rows into MySQL read tables: the DDL of a
// read table and readside's bookkeeping tables, and batches applied in one
// transaction each with version guards, tombstones and the consumed
// offsets, so a batch is applied wholly or not at all and replaying it
// changes nothing.
package sinks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/projections"
)

// MySQL is one sink server (one shard).
type MySQL struct {
	db *sql.DB
}

// Open connects to a sink; the DSN's database holds the read tables.
func Open(ctx context.Context, dsn string) (*MySQL, error) {
	cfg, err := driver.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("sink DSN: %w", err)
	}
	if cfg.DBName == "" {
		return nil, errors.New("sink DSN names no database: end it with /<database>")
	}
	cfg.MultiStatements = false
	connector, err := driver.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(8)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to the sink: %w", err)
	}
	return &MySQL{db: db}, nil
}

// Close releases the connections.
func (s *MySQL) Close() error { return s.db.Close() }

// DB is the connection pool (tests and verification read through it).
func (s *MySQL) DB() *sql.DB { return s.db }

func q(ident string) string { return "`" + strings.ReplaceAll(ident, "`", "``") + "`" }

// bookkeeping tables, one set per sink database.
var bookkeeping = []string{
	"CREATE TABLE IF NOT EXISTS `_readside_offsets` (projection VARCHAR(190) NOT NULL, topic VARCHAR(249) NOT NULL, part INT NOT NULL, next_offset BIGINT NOT NULL, updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), PRIMARY KEY (projection, topic, part))",
	"CREATE TABLE IF NOT EXISTS `_readside_tombstones` (projection VARCHAR(190) NOT NULL, key_text VARBINARY(2048) NOT NULL, version BIGINT UNSIGNED NOT NULL, PRIMARY KEY (projection, key_text))",
	"CREATE TABLE IF NOT EXISTS `_readside_truncations` (projection VARCHAR(190) NOT NULL PRIMARY KEY, version BIGINT UNSIGNED NOT NULL)",
}

// DDL returns the statements that create p's read table and readside's
// bookkeeping tables. cols gives each read column's definition (type,
// charset, nullability) as taken from the source column it copies.
func DDL(p *projections.Projection, cols map[string]string) []string {
	var defs []string
	for _, c := range p.Columns {
		// Key columns are NOT NULL already: SourceColumns refuses
		// nullable ones.
		defs = append(defs, q(c.Name)+" "+cols[c.Name])
	}
	var key []string
	for _, k := range p.Key {
		key = append(key, q(k))
	}
	defs = append(defs, "`_rs_version` BIGINT UNSIGNED NOT NULL COMMENT 'readside: source version of this row'",
		"PRIMARY KEY ("+strings.Join(key, ", ")+")")
	table := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n  %s\n) COMMENT='readside projection %s from %s.%s'",
		q(p.Table), strings.Join(defs, ",\n  "), p.Name, p.SourceDB, p.SourceTbl)
	return append(append([]string{}, bookkeeping...), table)
}

// Exec runs DDL statements.
func (s *MySQL) Exec(ctx context.Context, stmts []string) error {
	for _, st := range stmts {
		if _, err := s.db.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	return nil
}

// Offsets returns the next offset to consume per partition of p's topic,
// as committed with the rows.
func (s *MySQL) Offsets(ctx context.Context, p *projections.Projection) (map[int32]int64, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT part, next_offset FROM `_readside_offsets` WHERE projection = ? AND topic = ?", p.Name, p.Topic)
	if err != nil {
		return nil, fmt.Errorf("reading offsets of %s: %w", p.Name, err)
	}
	defer rows.Close()
	out := map[int32]int64{}
	for rows.Next() {
		var part int32
		var off int64
		if err := rows.Scan(&part, &off); err != nil {
			return nil, err
		}
		out[part] = off
	}
	return out, rows.Err()
}

// retryable reports errors a batch is retried for: deadlocks, lock wait
// timeouts, a read-only or restarting server, lost connections.
func retryable(err error) bool {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1213, 1205, 1290, 1836, 2006, 2013, 1053:
			return true
		}
		return false
	}
	return errors.Is(err, driver.ErrInvalidConn) || errors.Is(err, sql.ErrConnDone)
}

// Apply writes a batch (already coalesced: one write per read key, the
// newest) and the offsets it consumed up to, in one transaction, retrying
// transient failures. A commit whose outcome is unknown is retried too:
// the version guards make a second application change nothing.
func (s *MySQL) Apply(ctx context.Context, p *projections.Projection, writes []projections.Write, offsets map[int32]int64) error {
	backoff := 50 * time.Millisecond
	for {
		err := s.apply(ctx, p, writes, offsets)
		if err == nil || !retryable(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (s *MySQL) apply(ctx context.Context, p *projections.Projection, writes []projections.Write, offsets map[int32]int64) (err error) {
	// READ COMMITTED: the version guards make gap locks unnecessary, and
	// gap locks between concurrent batches would only deadlock. (Set per
	// transaction: the variable's name differs between MySQL and MariaDB.)
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	comment := "/* readside " + strings.ReplaceAll(p.Name, "*/", "") + " */ "

	var truncateAt uint64
	var upserts, deletes []projections.Write
	for _, w := range writes {
		switch w.Kind {
		case projections.Truncate:
			truncateAt = max(truncateAt, w.Version)
		case projections.Upsert:
			upserts = append(upserts, w)
		case projections.Delete:
			deletes = append(deletes, w)
		}
	}
	if truncateAt > 0 {
		if _, err := tx.ExecContext(ctx, comment+"INSERT INTO `_readside_truncations` (projection, version) VALUES (?, ?) ON DUPLICATE KEY UPDATE version = GREATEST(version, VALUES(version))", p.Name, truncateAt); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, comment+"DELETE FROM "+q(p.Table)+" WHERE _rs_version < ?", truncateAt); err != nil {
			return err
		}
	}
	if len(upserts) > 0 {
		if upserts, err = s.dropShadowed(ctx, tx, p, upserts); err != nil {
			return err
		}
		if err := s.upsert(ctx, tx, p, upserts, comment); err != nil {
			return err
		}
	}
	if err := s.delete(ctx, tx, p, deletes, comment); err != nil {
		return err
	}
	for part, next := range offsets {
		if _, err := tx.ExecContext(ctx, comment+"INSERT INTO `_readside_offsets` (projection, topic, part, next_offset) VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE next_offset = GREATEST(next_offset, VALUES(next_offset))",
			p.Name, p.Topic, part, next); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// dropShadowed removes upserts a newer (or equal) delete or truncate
// already covers: a late or replayed upsert never resurrects a row.
func (s *MySQL) dropShadowed(ctx context.Context, tx *sql.Tx, p *projections.Projection, ups []projections.Write) ([]projections.Write, error) {
	var floor uint64
	if err := tx.QueryRowContext(ctx, "SELECT version FROM `_readside_truncations` WHERE projection = ?", p.Name).Scan(&floor); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	tomb := map[string]uint64{}
	for start := 0; start < len(ups); start += 500 {
		chunk := ups[start:min(start+500, len(ups))]
		args := []any{p.Name}
		for _, w := range chunk {
			args = append(args, []byte(w.Key))
		}
		rows, err := tx.QueryContext(ctx, "SELECT key_text, version FROM `_readside_tombstones` WHERE projection = ? AND key_text IN (?"+strings.Repeat(", ?", len(chunk)-1)+")", args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k []byte
			var v uint64
			if err := rows.Scan(&k, &v); err != nil {
				rows.Close()
				return nil, err
			}
			tomb[string(k)] = v
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	kept := ups[:0]
	for _, w := range ups {
		if w.Version <= floor || w.Version <= tomb[w.Key] {
			continue
		}
		kept = append(kept, w)
	}
	return kept, nil
}

// upsert writes rows whose version is newer than what the table holds.
// ON DUPLICATE KEY UPDATE assigns left to right, so every column compares
// against the old _rs_version and _rs_version itself is assigned last.
func (s *MySQL) upsert(ctx context.Context, tx *sql.Tx, p *projections.Projection, ups []projections.Write, comment string) error {
	if len(ups) == 0 {
		return nil
	}
	var cols, sets []string
	for i, c := range p.Columns {
		cols = append(cols, q(c.Name))
		if i >= len(p.Key) {
			sets = append(sets, fmt.Sprintf("%[1]s = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(%[1]s), %[1]s)", q(c.Name)))
		}
	}
	sets = append(sets, "`_rs_version` = GREATEST(`_rs_version`, VALUES(`_rs_version`))")
	row := "(" + strings.Repeat("?, ", len(p.Columns)) + "?)"
	for start := 0; start < len(ups); start += 500 {
		chunk := ups[start:min(start+500, len(ups))]
		var args []any
		for _, w := range chunk {
			args = append(args, w.Values...)
			args = append(args, w.Version)
		}
		stmt := comment + "INSERT INTO " + q(p.Table) + " (" + strings.Join(cols, ", ") + ", `_rs_version`) VALUES " +
			row + strings.Repeat(", "+row, len(chunk)-1) + " ON DUPLICATE KEY UPDATE " + strings.Join(sets, ", ")
		if _, err := tx.ExecContext(ctx, stmt, args...); err != nil {
			return fmt.Errorf("upserting into %s: %w", p.Table, err)
		}
	}
	return nil
}

// delete removes rows older than each delete and records its version.
func (s *MySQL) delete(ctx context.Context, tx *sql.Tx, p *projections.Projection, dels []projections.Write, comment string) error {
	var where []string
	for _, k := range p.Key {
		where = append(where, q(k)+" = ?")
	}
	stmt := comment + "DELETE FROM " + q(p.Table) + " WHERE " + strings.Join(where, " AND ") + " AND `_rs_version` < ?"
	// Tombstones first, one multi-row statement per 500 deletes.
	for start := 0; start < len(dels); start += 500 {
		chunk := dels[start:min(start+500, len(dels))]
		var args []any
		for _, w := range chunk {
			args = append(args, p.Name, []byte(w.Key), w.Version)
		}
		if _, err := tx.ExecContext(ctx, comment+"INSERT INTO `_readside_tombstones` (projection, key_text, version) VALUES (?, ?, ?)"+
			strings.Repeat(", (?, ?, ?)", len(chunk)-1)+" ON DUPLICATE KEY UPDATE version = GREATEST(version, VALUES(version))", args...); err != nil {
			return fmt.Errorf("recording tombstones of %s: %w", p.Table, err)
		}
	}
	for _, w := range dels {
		if _, err := tx.ExecContext(ctx, stmt, append(append([]any{}, w.Values...), w.Version)...); err != nil {
			return fmt.Errorf("deleting from %s: %w", p.Table, err)
		}
	}
	return nil
}
