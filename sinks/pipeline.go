package sinks

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"time"
)

// stmts runs the statements of one batch's transaction.
type stmts interface {
	// exec runs a statement whose result the batch does not read; it may
	// be sent later, with the next query or the commit, so its error may
	// come from either of those.
	exec(ctx context.Context, query string, args []any) error
	// query runs a statement whose rows the batch reads, after every
	// statement exec'd before it.
	query(ctx context.Context, query string, args []any) (*sql.Rows, error)
	// check runs a query whose rows read decides whether the transaction
	// goes on (read's error ends it). It may be sent later, in one packet
	// with the next query or statements, but always before the COMMIT, so
	// its error may come from the next exec, query or commit.
	check(ctx context.Context, query string, args []any, read func(*sql.Rows) error) error
	commit(ctx context.Context) error
	// rollback ends a transaction that failed; the connection goes back
	// to the pool only when it is known to be outside a transaction.
	rollback()
	// endReleasesLocks has the transaction's end (commit or rollback)
	// release every named lock its connection holds (GET_LOCK), before
	// the connection goes back to the pool.
	endReleasesLocks()
}

// releaseLocks releases a connection's named locks: readside takes none on
// sink connections but the frontier's owner mark (frontier_owner.go).
const releaseLocks = "DO RELEASE_ALL_LOCKS()"

// txStmts is one statement per round trip in a database/sql transaction:
// the fallback for a sink whose connection charset rules out the
// driver writing the parameters into the statement text (interpolationSafe),
// without which statements cannot be sent together.
type txStmts struct {
	tx *sql.Tx
	// locks: release named locks before the COMMIT or ROLLBACK, which
	// hand the connection back to the pool (a process frozen between the
	// two round trips keeps the row without the mark).
	locks bool
}

func (t *txStmts) exec(ctx context.Context, query string, args []any) error {
	_, err := t.tx.ExecContext(ctx, query, args...)
	return err
}

func (t *txStmts) query(ctx context.Context, query string, args []any) (*sql.Rows, error) {
	return t.tx.QueryContext(ctx, query, args...)
}

func (t *txStmts) check(ctx context.Context, query string, args []any, read func(*sql.Rows) error) error {
	rows, err := t.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := read(rows); err != nil {
		return err
	}
	return rows.Close()
}

func (t *txStmts) commit(ctx context.Context) error {
	if t.locks {
		if _, err := t.tx.ExecContext(ctx, releaseLocks); err != nil {
			return err
		}
	}
	return t.tx.Commit()
}

func (t *txStmts) rollback() {
	if t.locks {
		_, _ = t.tx.Exec(releaseLocks)
	}
	_ = t.tx.Rollback()
}

func (t *txStmts) endReleasesLocks() { t.locks = true }

// pipeline sends a transaction in as few round trips as its reads allow.
// Statements whose results the batch does not read wait and go out in one
// multi-statement packet with the next query, or with the COMMIT: a caught-up
// batch of a projection without joins is two round trips (START TRANSACTION
// and the tombstone lookup; the upserts, deletes, offsets, watermarks and
// COMMIT) instead of six. On a busy sink each round trip costs a few
// milliseconds, which is most of a small batch's commit → visible time
// (bench/results/history/tuning-log.md, entry 24).
//
// It is one transaction with the same statements in the same order as
// one statement per round trip: the server runs a packet's statements in
// order and stops at the first that fails, so nothing after a failed
// statement runs, the COMMIT included, and the batch is rolled back and
// retried like any failed batch.
//
// The statements go out as text with their values written in
// (appendStatement), not as parameters for the driver to interpolate.
type pipeline struct {
	conn  *sql.Conn
	limit int    // bytes sent together (see begin)
	text  []byte // statements waiting, in order, "; "-joined, values written in
	n     int    // how many
	// maxText is the longest statement the packet limit lets go out as
	// text (max_allowed_packet, less room for the COMMIT after it). A
	// longer one — a row of quotes or backslashes doubles when escaped —
	// goes alone with parameters, which the driver prepares: values then
	// travel outside the statement's packet.
	maxText int
	// checking is the reader of a check waiting in text: the next packet
	// goes out as a query, whose first result set is the check's.
	checking func(*sql.Rows) error
	// locks: the COMMIT or ROLLBACK carries releaseLocks in its packet.
	locks bool
}

func (p *pipeline) endReleasesLocks() { p.locks = true }

// errTextTooLarge: a statement too long to send as text (see maxText).
var errTextTooLarge = errors.New("statement too long to send as text")

func (p *pipeline) add(query string, args []any) error {
	if p.n > 0 {
		p.text = append(p.text, "; "...)
	}
	var err error
	p.text, err = appendStatement(p.text, query, args)
	p.n++
	return err
}

// take returns the waiting statements as one text, and empties the queue.
func (p *pipeline) take() string {
	text := string(p.text)
	p.text, p.n = p.text[:0], 0
	return text
}

// room sends the waiting statements first when adding one of about n
// bytes would pass the limit.
func (p *pipeline) room(ctx context.Context, n int) error {
	if p.n > 0 && len(p.text)+n > p.limit {
		return p.flush(ctx)
	}
	return nil
}

func (p *pipeline) flush(ctx context.Context) error {
	if p.n == 0 {
		return nil
	}
	if p.checking != nil {
		rows, err := p.sendChecked(ctx)
		if err != nil {
			return err
		}
		for rows.NextResultSet() {
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return err
		}
		return rows.Close()
	}
	_, err := p.conn.ExecContext(ctx, p.take())
	return err
}

// check queues the check after what waits (START TRANSACTION, when it
// comes first): it costs no round trip of its own when a query follows
// (the first tombstone lookup, in most batches).
func (p *pipeline) check(ctx context.Context, query string, args []any, read func(*sql.Rows) error) error {
	if err := p.room(ctx, len(query)+argBytes(args)); err != nil {
		return err
	}
	if err := p.add(query, args); err != nil {
		return err
	}
	p.checking = read
	return nil
}

// sendChecked sends the waiting statements, a check among them, as one
// query, reads the check's result set, and returns the rows after it
// (the driver skips statements without a result set).
func (p *pipeline) sendChecked(ctx context.Context) (*sql.Rows, error) {
	read := p.checking
	p.checking = nil
	rows, err := p.conn.QueryContext(ctx, p.take())
	if err != nil {
		return nil, err
	}
	if err := read(rows); err != nil {
		rows.Close()
		return nil, err
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return nil, err
	}
	return rows, nil
}

func (p *pipeline) exec(ctx context.Context, query string, args []any) error {
	if err := p.room(ctx, len(query)+argBytes(args)); err != nil {
		return err
	}
	mark, n := len(p.text), p.n
	if err := p.add(query, args); err != nil {
		return err
	}
	if len(p.text)-mark <= p.maxText {
		return nil
	}
	p.text, p.n = p.text[:mark], n
	if err := p.flush(ctx); err != nil {
		return err
	}
	_, err := p.conn.ExecContext(ctx, query, args...)
	return err
}

// textStmts is a statement runner that takes statements written whole,
// values included (the pipeline).
type textStmts interface {
	// execText runs, like exec, the statement write appends to the
	// text; n is about its length. errTextTooLarge: the statement is
	// too long to go as text, and must go through exec instead.
	execText(ctx context.Context, n int, write func(text []byte) []byte) error
}

func (p *pipeline) execText(ctx context.Context, n int, write func([]byte) []byte) error {
	if err := p.room(ctx, n); err != nil {
		return err
	}
	mark := len(p.text)
	if p.n > 0 {
		p.text = append(p.text, "; "...)
	}
	p.text = write(p.text)
	if len(p.text)-mark > p.maxText {
		p.text = p.text[:mark]
		return errTextTooLarge
	}
	p.n++
	return nil
}

// query sends the waiting statements and the query in one packet; the
// driver skips their (empty) results to the query's rows, and returns the
// error of any of them instead.
func (p *pipeline) query(ctx context.Context, query string, args []any) (*sql.Rows, error) {
	if err := p.room(ctx, len(query)+argBytes(args)); err != nil {
		return nil, err
	}
	if err := p.add(query, args); err != nil {
		return nil, err
	}
	if p.checking == nil {
		return p.conn.QueryContext(ctx, p.take())
	}
	rows, err := p.sendChecked(ctx)
	if err != nil {
		return nil, err
	}
	if !rows.NextResultSet() {
		err := rows.Err()
		rows.Close()
		if err == nil {
			err = errors.New("the query sent after a check returned no rows")
		}
		return nil, err
	}
	return rows, nil
}

func (p *pipeline) commit(ctx context.Context) error {
	// The check's rows must be read before the COMMIT is sent.
	if p.checking != nil {
		if err := p.flush(ctx); err != nil {
			return err
		}
	}
	if err := p.add("COMMIT", nil); err != nil {
		return err
	}
	if p.locks {
		if err := p.add(releaseLocks, nil); err != nil {
			return err
		}
	}
	if err := p.flush(ctx); err != nil {
		return err
	}
	err := p.conn.Close()
	p.conn = nil
	return err
}

func (p *pipeline) rollback() {
	if p.conn == nil {
		return
	}
	p.take()
	p.checking = nil
	// Bounded and detached from the batch's context, which may be what
	// failed: a connection left inside a transaction must not go back to
	// the pool, so one whose ROLLBACK fails is discarded.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	end := "ROLLBACK"
	if p.locks {
		end += "; " + releaseLocks
	}
	if _, err := p.conn.ExecContext(ctx, end); err != nil {
		_ = p.conn.Raw(func(any) error { return sqldriver.ErrBadConn })
	}
	_ = p.conn.Close()
	p.conn = nil
}
