// Package sinks writes projected rows into MySQL read tables: the DDL of a
// read table and readside's bookkeeping tables, and batches applied in one
// transaction each with version guards, tombstones and the consumed
// offsets, so a batch is applied wholly or not at all and replaying it
// changes nothing.
package sinks

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/sqlquote"
	"github.com/readside/readside/projections"
)

// MySQL is one sink server (one shard).
type MySQL struct {
	db *sql.DB
	// pipe, when set, is the pool batches are applied through: the same
	// connections with multi-statement packets allowed (pipeline). Every
	// other statement (DDL, offsets on assignment, checks) goes through db.
	pipe       *sql.DB
	maxPacket  int // the server's max_allowed_packet
	dialect    dialect
	mariadb    bool
	enumZero   sync.Map // read table → enumZeroColumns
	statements sync.Map // projection name → *statements (statementsFor)
	// fanOutWakes: projection name → chan struct{} (fanOutWake).
	fanOutWakes sync.Map
	// inFlight: projection name → *atomic.Int32 (batchesInFlight).
	inFlight sync.Map
	// guesses: projection name → *firstGuess (aggregate_guess.go).
	guesses sync.Map
	// Log, when set, reports retried batches (not those retried after a
	// deadlock or a contention: contended).
	Log *slog.Logger
	// namesBinary: the bookkeeping tables' name columns compare byte for
	// byte (binaryNames), checked once.
	namesMu     sync.Mutex
	namesBinary bool
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
	// Learn the server's max_allowed_packet on connect, so an oversized
	// statement is refused before it is sent and the batch is halved.
	cfg.MaxAllowedPacket = 0
	// The driver writes the parameters into the statement text: one round
	// trip per statement instead of a prepare and an execute, which on a
	// busy server is most of a small batch's time. Not with a multibyte
	// connection charset whose characters can end in a backslash byte, and
	// a statement too large for max_allowed_packet once its values are
	// escaped is prepared (the driver falls back by itself).
	cfg.InterpolateParams = interpolationSafe(cfg)
	connector, err := driver.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(session{Connector: connector})
	db.SetMaxOpenConns(8)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to the sink: %w", err)
	}
	m := &MySQL{db: db}
	var version string
	if err := db.QueryRowContext(ctx, "SELECT @@max_allowed_packet, VERSION()").Scan(&m.maxPacket, &version); err != nil {
		db.Close()
		return nil, fmt.Errorf("reading the sink's max_allowed_packet: %w", err)
	}
	m.dialect = dialectOf(version)
	m.mariadb = strings.Contains(strings.ToLower(version), "mariadb")
	if cfg.InterpolateParams && !saysNoMultiStatements(dsn) {
		// Statements go out together only as text: prepared statements
		// hold one statement each.
		pcfg := cfg.Clone()
		pcfg.MultiStatements = true
		pconn, err := driver.NewConnector(pcfg)
		if err != nil {
			db.Close()
			return nil, err
		}
		m.pipe = sql.OpenDB(session{Connector: pconn, literals: true})
		m.pipe.SetMaxOpenConns(8)
	}
	return m, nil
}

// begin starts a batch's transaction: pipelined when the sink allows it.
func (s *MySQL) begin(ctx context.Context) (stmts, error) {
	if s.pipe == nil {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		return &txStmts{tx: tx}, nil
	}
	conn, err := s.pipe.Conn(ctx)
	if err != nil {
		return nil, err
	}
	// Statements sent together stay under half a statement's limit, so a
	// packet's escaped text stays within max_allowed_packet and the driver
	// never falls back to a prepared statement, which cannot hold several.
	return &pipeline{conn: conn, limit: s.stmtLimit() / 2, maxText: s.maxPacket - 1024, text: []byte("START TRANSACTION"), n: 1}, nil
}

// beginApplier begins a transaction on s for p's statements, each tagged
// with p's name so the server's process list and logs show whose it is.
// The caller rolls it back on error (rollbackOnError).
func (s *MySQL) beginApplier(ctx context.Context, p *projections.Projection) (*applier, error) {
	st, err := s.statementsFor(ctx, p)
	if err != nil {
		return nil, err
	}
	run, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	return &applier{ctx: ctx, run: run, p: p, st: st, limit: s.stmtLimit(), guess: s.readAll(ctx, p), guessMark: s.guessFor(p)}, nil
}

// rollbackOnError rolls a's transaction back if *err, the caller's named
// result, is set when the caller returns.
func (a *applier) rollbackOnError(err *error) {
	if *err != nil {
		a.run.rollback()
	}
}

// interpolationSafe reports whether the connection charset lets the driver
// escape values into statement text: single-byte and UTF-8 ones do.
func interpolationSafe(cfg *driver.Config) bool {
	safe := func(charset string) bool {
		switch strings.ToLower(charset) {
		case "utf8mb4", "utf8mb3", "utf8", "latin1", "ascii", "binary":
			return true
		}
		return false
	}
	if cfg.Collation != "" && !safe(strings.SplitN(cfg.Collation, "_", 2)[0]) {
		return false
	}
	_, query, _ := strings.Cut(cfg.FormatDSN(), "?")
	params, err := url.ParseQuery(query)
	if err != nil {
		return false
	}
	for _, cs := range strings.Split(params.Get("charset"), ",") {
		if cs != "" && !safe(cs) {
			return false
		}
	}
	return true
}

// saysNoMultiStatements reports a DSN with multiStatements=false: the
// operator's way to keep one statement per packet (a proxy in front of the
// sink that refuses multi-statement packets); batches then take a round
// trip per statement (docs/config.md).
func saysNoMultiStatements(dsn string) bool {
	slash := strings.LastIndex(dsn, "/")
	_, query, found := strings.Cut(dsn[slash+1:], "?")
	if !found {
		return false
	}
	params, err := url.ParseQuery(query)
	if err != nil {
		return false
	}
	v, set := params["multiStatements"]
	if !set {
		return false
	}
	on, err := strconv.ParseBool(v[len(v)-1])
	return err == nil && !on
}

// sinkSQLMode is the sql_mode every sink session runs under, whatever the
// server's default: strict, so a value the read column cannot hold is an
// error rather than a silent truncation; ALLOW_INVALID_DATES and no
// NO_ZERO_DATE/NO_ZERO_IN_DATE, so zero and invalid dates a source
// accepted (and published) land as they are; NO_ENGINE_SUBSTITUTION, so a
// read table is never silently created in another engine. Nothing that
// changes how statements are parsed (ANSI_QUOTES, PIPES_AS_CONCAT,
// NO_BACKSLASH_ESCAPES: see session) or how values read back
// (PAD_CHAR_TO_FULL_LENGTH). Every mode here exists under this name on
// MySQL 5.7+ and MariaDB 10.x.
const sinkSQLMode = "STRICT_ALL_TABLES,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION"

// session opens sink connections with what makes values exact whatever
// the server's defaults are, once per connection (pooled ones included):
//   - time_zone +00:00: events carry TIMESTAMPs in UTC, and a session in
//     another zone would shift them (and refuse the first hours of 1970);
//   - utf8mb4: events carry text as UTF-8, whatever charset the DSN asks
//     for (binary values are sent as binary literals and are unaffected);
//   - sql_mode sinkSQLMode;
//   - group_concat_max_len 1 GiB (max_allowed_packet's largest, so no
//     client could read a longer value anyway): it bounds JSON_ARRAYAGG
//     too, and a nested children array cut short would be invalid JSON;
//   - READ COMMITTED: every batch needs it (apply), and setting it once per
//     connection saves a round trip per transaction. The statement is the
//     same on MySQL and MariaDB, unlike the variable behind it;
//   - on MariaDB, in_predicate_conversion_threshold 0: MariaDB rewrites an
//     IN list of 1,000 constants or more into a join with a table of them,
//     whose plan follows the table's statistics — for a table that is
//     small or just filled, a scan of every row, which a locking read by
//     key (FOR UPDATE) then locks, waiting on rows other transactions
//     write. Batches read up to 5,000 keys at a time (lookupChunk); kept
//     as IN lists they are ranges of the primary key. MySQL has no such
//     rewrite and no such variable (inPredicateConversion).
//
// NO_BACKSLASH_ESCAPES is kept when the DSN's own sql_mode asks for it
// (the driver then escapes parameters the way the session reads them),
// except with literals (the pipeline's connections, whose statements
// carry their values as backslash-escaped literals: appendStatement),
// where a backslash must stay an escape.
type session struct {
	sqldriver.Connector
	literals bool
}

func (c session) Connect(ctx context.Context) (sqldriver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	mode := "'" + sinkSQLMode + "'"
	if !c.literals {
		mode = "CONCAT('" + sinkSQLMode + "', IF(FIND_IN_SET('NO_BACKSLASH_ESCAPES', @@SESSION.sql_mode), ',NO_BACKSLASH_ESCAPES', ''))"
	}
	setup := []string{
		"SET NAMES utf8mb4, time_zone = '+00:00', sql_mode = " + mode + ", group_concat_max_len = 1073741824",
		"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
	}
	for _, st := range setup {
		if _, err := conn.(sqldriver.ExecerContext).ExecContext(ctx, st, nil); err != nil {
			conn.Close()
			return nil, fmt.Errorf("setting up a sink connection (%s): %w", st, err)
		}
	}
	if _, err := conn.(sqldriver.ExecerContext).ExecContext(ctx, inPredicateConversion, nil); err != nil && !unknownVariable(err) {
		conn.Close()
		return nil, fmt.Errorf("setting up a sink connection (%s): %w", inPredicateConversion, err)
	}
	return conn, nil
}

// inPredicateConversion keeps long IN lists as lists on MariaDB (session).
// MySQL answers it with "unknown system variable", which is ignored: one
// statement for both, no version to learn before it.
const inPredicateConversion = "SET SESSION in_predicate_conversion_threshold = 0"

// unknownVariable reports the server's "Unknown system variable" error.
func unknownVariable(err error) bool {
	var me *driver.MySQLError
	return errors.As(err, &me) && me.Number == 1193
}

// Close releases the connections.
func (s *MySQL) Close() error {
	if s.pipe != nil {
		s.pipe.Close()
	}
	return s.db.Close()
}

// DB is the connection pool (tests and verification read through it).
func (s *MySQL) DB() *sql.DB { return s.db }

// q is sqlquote.Ident under the short name the statement builders use.
func q(ident string) string { return sqlquote.Ident(ident) }

// QuoteIdent quotes a table or column name for the sink (for commands
// that query read tables, like `readside status`).
func QuoteIdent(ident string) string { return sqlquote.Ident(ident) }

// Exec runs DDL statements.
func (s *MySQL) Exec(ctx context.Context, stmts []string) error {
	for _, st := range stmts {
		if _, err := s.db.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	if slices.Contains(stmts, bookkeeping[0]) {
		return s.binaryNames(ctx)
	}
	return nil
}

// Offsets returns the next offset to consume per topic and partition of
// p, as committed with the rows.
func (s *MySQL) Offsets(ctx context.Context, p *projections.Projection) (event.Offsets, error) {
	// Retried like a batch: a sink that is briefly away must not fail a
	// partition assignment.
	var o event.Offsets
	err := retrying(ctx, func() (err error) {
		o, err = s.offsets(ctx, p)
		return err
	})
	return o, err
}

func (s *MySQL) offsets(ctx context.Context, p *projections.Projection) (event.Offsets, error) {
	return readOffsets(ctx, s.db, p.OffsetsName())
}

// readOffsets reads the offsets stored under name, through a connection
// pool or inside a transaction (a cutover's, under its fence).
func readOffsets(ctx context.Context, q interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, name string) (event.Offsets, error) {
	rows, err := q.QueryContext(ctx, "SELECT topic, part, next_offset FROM `_readside_offsets` WHERE projection = ?", name)
	if err != nil {
		return nil, fmt.Errorf("reading offsets of %s: %w", name, err)
	}
	defer rows.Close()
	out := event.Offsets{}
	for rows.Next() {
		var topic string
		var part int32
		var off int64
		if err := rows.Scan(&topic, &part, &off); err != nil {
			return nil, err
		}
		out.Set(topic, part, off)
	}
	return out, rows.Err()
}

// retryable reports errors a batch is retried for: deadlocks, lock wait
// timeouts, a read-only or restarting server (failover), and every error
// that says the connection was lost or refused, so a sink outage stalls
// the projector until the sink is back instead of stopping it.
func retryable(err error) bool {
	if errors.As(err, new(contention)) {
		return true
	}
	var me *driver.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1213, 1205, 1290, 1836, 2006, 2013, 1053, 1927, 1047:
			return true
		}
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, driver.ErrInvalidConn) || errors.Is(err, sqldriver.ErrBadConn) ||
		errors.Is(err, sql.ErrConnDone) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// contended reports a deadlock or a contention: concurrent batches of a
// projection meet them in normal operation, and a retry settles them, so
// they are not worth a warning (a sink away, a lock wait timeout are).
func contended(err error) bool {
	var me *driver.MySQLError
	return errors.As(err, new(contention)) || (errors.As(err, &me) && me.Number == 1213)
}

// contention is an error that says another transaction wrote what this
// one had read as absent: the batch is retried, as after a deadlock.
type contention struct{ err error }

func (c contention) Error() string {
	if errors.As(c.err, new(wrongGuess)) {
		return c.err.Error() + " (an inserted row's key was already stored: a replay, a duplicate or a key reused after its delete; retried reading every key)"
	}
	return c.err.Error() + " (written by another transaction since it was read: retried)"
}
func (c contention) Unwrap() error { return c.err }

// isDuplicateKey reports MySQL's duplicate-key error (1062).
func isDuplicateKey(err error) bool {
	var me *driver.MySQLError
	return errors.As(err, &me) && me.Number == 1062
}

// retrying runs f until it succeeds, fails with an error retrying cannot
// fix, or ctx ends, backing off from 50 ms to 5 s: a sink that is briefly
// away (restarted, failing over) stalls the caller instead of stopping it.
func retrying(ctx context.Context, f func() error) error {
	backoff := 50 * time.Millisecond
	for {
		err := f()
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

// tooLarge reports a statement over max_allowed_packet (the driver learns
// the server's value on connect and refuses before sending).
func tooLarge(err error) bool {
	var me *driver.MySQLError
	return errors.Is(err, driver.ErrPktTooLarge) || (errors.As(err, &me) && me.Number == 1153)
}

// Apply writes a batch (already coalesced: one write per read key, the
// newest) and the offsets it consumed up to, in one transaction, retrying
// transient failures with backoff. A commit whose outcome is unknown is
// retried too: the version guards make a second application change
// nothing. A batch too large for max_allowed_packet is applied in halves,
// the offsets with the last one.
func (s *MySQL) Apply(ctx context.Context, p *projections.Projection, b *projections.Batch) error {
	return s.retried(ctx, p, b, func(ctx context.Context, p *projections.Projection, b *projections.Batch) error {
		return s.apply(ctx, p, b, nil)
	})
}

// retried runs apply (one transaction for b) until it succeeds, as Apply
// describes: transient failures again with backoff, a batch too large in
// halves.
func (s *MySQL) retried(ctx context.Context, p *projections.Projection, b *projections.Batch, apply func(context.Context, *projections.Projection, *projections.Batch) error) error {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := apply(ctx, p, b)
		if err == nil || ctx.Err() != nil {
			return err
		}
		if tooLarge(err) && len(b.Writes)+len(b.Parents)+len(b.Contributions)+len(b.ChildWrites) > 1 {
			first, second := halve(b)
			if err := s.retried(ctx, p, first, apply); err != nil {
				return err
			}
			return s.retried(ctx, p, second, apply)
		}
		if !retryable(err) {
			return err
		}
		ctx = retryReadingEveryKey(ctx, err)
		if s.Log != nil && !contended(err) {
			s.Log.Warn("sink batch failed; retrying", "projection", p.Name, "attempt", attempt, "in", backoff, "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// stmtLimit is the parameter bytes one statement may carry: half the
// server's max_allowed_packet leaves room for the statement text.
func (s *MySQL) stmtLimit() int { return max(s.maxPacket/2, 1024) }

// halve splits a batch in two; the offsets go with the second half so they
// are committed only after every row. Child state changes go first, alone
// when there is anything else: each half refreshes the arrays of the
// parents it touches, so any split leaves every array rebuilt from the
// state as of the later half.
func halve(b *projections.Batch) (*projections.Batch, *projections.Batch) {
	first := &projections.Batch{Stale: b.Stale, Shard: b.Shard, CaughtUp: b.CaughtUp}
	second := &projections.Batch{Offsets: b.Offsets, NewestTS: b.NewestTS, Stale: b.Stale, Marks: b.Marks, Shard: b.Shard, CaughtUp: b.CaughtUp}
	if len(b.Contributions) > 0 {
		// An aggregate projection's contributions each apply on their own
		// (their source key's version decides), so any split is exact; its
		// parent state (joins) goes with the first half.
		n := len(b.Contributions) / 2
		first.Contributions, second.Contributions = b.Contributions[:n], b.Contributions[n:]
		first.Parents = b.Parents
		return first, second
	}
	if len(b.ChildWrites) > 0 {
		rest := *b
		rest.ChildWrites = nil
		if len(b.Writes)+len(b.Parents) > 0 {
			first.ChildWrites = b.ChildWrites
			return first, &rest
		}
		n := len(b.ChildWrites) / 2
		first.ChildWrites = b.ChildWrites[:n]
		rest.ChildWrites = b.ChildWrites[n:]
		return first, &rest
	}
	if len(b.Parents) > 1 || (len(b.Parents) == 1 && len(b.Writes) > 0) {
		n := (len(b.Parents) + 1) / 2
		if len(b.Writes) > 0 {
			n = len(b.Parents)
		}
		first.Parents, second.Parents = b.Parents[:n], b.Parents[n:]
		second.Writes = b.Writes
		return first, second
	}
	second.Parents = b.Parents
	n := len(b.Writes) / 2
	first.Writes, second.Writes = b.Writes[:n], b.Writes[n:]
	return first, second
}

// Rejected reports errors by which the sink refuses a row's data — too
// long, out of range, an invalid value, a NULL where none may be, a
// constraint — as opposed to failing to be reached. Only these send a row
// to the dead-letter topic (on_error: dlq).
func Rejected(err error) bool {
	var me *driver.MySQLError
	if errors.As(err, new(contention)) || !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 1048, // column cannot be null
		1062,       // duplicate entry on a unique key other than the read key
		1118,       // row size too large
		1264,       // out of range
		1265,       // data truncated
		1292,       // incorrect value
		1366,       // incorrect string/integer value
		1406,       // data too long
		1452,       // foreign key
		3140,       // invalid JSON
		3819, 4025: // CHECK constraint (MySQL, MariaDB)
		return true
	}
	return false
}

// CheckReadTable refuses a read table with a unique key besides its
// primary key: ON DUPLICATE KEY UPDATE matches any unique key, so a row
// could overwrite another row that merely shares that key's value.
func (s *MySQL) CheckReadTable(ctx context.Context, p *projections.Projection) error {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND NON_UNIQUE = 0 AND INDEX_NAME <> 'PRIMARY'`, p.Table)
	if err != nil {
		return fmt.Errorf("reading the indexes of %s: %w", p.Table, err)
	}
	defer rows.Close()
	var extra []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		extra = append(extra, name)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if err := childrenSink(p, s.mariadb); err != nil {
		return err
	}
	if len(extra) > 0 {
		return fmt.Errorf("read table %s of projection %s has unique key(s) %v besides its primary key: readside's upserts (ON DUPLICATE KEY UPDATE) would match them and overwrite the wrong row; make them non-unique (ALTER TABLE %s DROP INDEX …, ADD INDEX …)",
			p.Table, p.Name, extra, p.Table)
	}
	return nil
}
