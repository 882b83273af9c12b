package cdc

// XA transactions on the source. An XA transaction is binlogged in two
// parts: its changes, ended by an XA_PREPARE event (prepared, not yet
// decided), then XA COMMIT or XA ROLLBACK as a transaction of its own,
// possibly much later. MariaDB flags the first part's GTID event
// (FL_PREPARED_XA) and writes no XA START; MySQL writes XA START. One
// committed in one phase is on MariaDB an ordinary transaction (GTID,
// rows, XID), read as one; on MySQL XA START ... XA COMMIT ONE PHASE.
// Publishing a prepared part's rows could publish changes that then roll
// back, and holding them until the decision would hold the stream, so
// the tailer follows no XA transaction that changes a captured table: it
// stops on its first rows event (fail closed, docs/design/fail-closed.md).
// One that touches no captured table (another application's, a sink's
// on the source's server) publishes nothing and is passed over like any
// other transaction: each part ends a source transaction, so the
// checkpoint may land after it.

import (
	"context"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"
)

// mariadbPreparedXA is MariaDB's FL_PREPARED_XA GTID flag: the event
// group is an XA transaction's prepared part (go-mysql names the flags
// up to FL_DDL only).
const mariadbPreparedXA = 64

// xaStatement handles an XA statement's QUERY event.
func (s *stream) xaStatement(ctx context.Context, h *replication.EventHeader, q string) error {
	switch xaVerb(q) {
	case "start", "begin":
		s.xa, s.txnBegun = true, true
		return nil
	case "end":
		return nil
	case "commit", "rollback":
		// The decision on a prepared part, a transaction of its own; or
		// the end of a one-phase transaction.
		return s.xaEnd(ctx, h)
	}
	return fatalf("XA statement on the source at %s:%d (%s) that readside does not know: it cannot tell where the transaction ends. "+
		"Fix: report it with the server's version; meanwhile stop writing it on the source", s.file, h.LogPos, q)
}

// xaEnd ends the source transaction at h: an XA transaction's first
// part, prepared, or an XA COMMIT or ROLLBACK.
func (s *stream) xaEnd(ctx context.Context, h *replication.EventHeader) error {
	s.xa = false
	if err := s.txnEnd(ctx, h); err != nil {
		return err
	}
	return s.endTxn(ctx, h)
}

// xaRefused is the error of a rows event of captured table name inside
// an XA transaction.
func (s *stream) xaRefused(h *replication.EventHeader, name string) error {
	return fatalf("XA transaction on the source at %s:%d changes captured table %s: readside does not follow XA transactions on captured tables (it would publish prepared rows that may still roll back). "+
		"Fix: write %s in plain transactions (BEGIN ... COMMIT), or remove it from source.tables; the binlog keeps this event, so every restart meets it again: start over from a fresh snapshot (docs/operations.md, \"XA transactions\")", s.file, h.LogPos, name, name)
}

// xaVerb is the word after XA in an XA statement, lower case ("" if
// none), comments skipped as parseStatement skips them.
func xaVerb(q string) string {
	toks := tokenize(q)
	if len(toks) < 2 {
		return ""
	}
	return strings.ToLower(toks[1])
}
