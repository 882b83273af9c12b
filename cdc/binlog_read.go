package cdc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/readside/readside/internal/librarylog"
	"github.com/readside/readside/internal/rowdecode"
)

// syncerConfig configures go-mysql for the read stage: events go to queue.
func (s *stream) syncerConfig(queue eventQueue) replication.BinlogSyncerConfig {
	t := s.t
	c := replication.BinlogSyncerConfig{
		ServerID:        t.cfg.Source.ServerID,
		Flavor:          s.src.flavor,
		Host:            s.src.host,
		Port:            s.src.port,
		User:            s.src.user,
		Password:        s.src.password,
		TLSConfig:       s.src.tls,
		HeartbeatPeriod: t.cfg.Source.HeartbeatPeriod,
		ReadTimeout:     3 * t.cfg.Source.HeartbeatPeriod,
		// The tailer reconnects itself, from its checkpoint: go-mysql's own
		// retry resumes from wherever it stopped, even mid-transaction.
		DisableRetrySync: true,
		// Events go to the stream's own bounded queue (eventQueueSize);
		// go-mysql's streamer carries only the connection's error.
		SynchronousEventHandler: queue,
		EventCacheCount:         1,
		Logger:                  librarylog.Binlog(t.log),
		// Registered as the replica's host (the source's replica list): lets the
		// server_id preflight tell this tailer's own stale session from
		// another replica.
		Localhost: replicaHost(t.cfg.TransactionalID()),
		RowsEventDecodeFunc: func(e *replication.RowsEvent, data []byte) error {
			pos, err := e.DecodeHeader(data)
			if err != nil {
				return err
			}
			// The rows of a table readside does not read stay undecoded:
			// most of a source's binlog is usually other tables (and, with
			// the read tables on the source server, the sink's own writes,
			// which doubled the tailer's decoding in the bench's live runs).
			if !s.readsRows(e.Table) {
				return nil
			}
			// Refuse an oversized rows event before decoding it into Go
			// values (several times its size): memory stays bounded and the
			// operator gets the event and the knob instead of an OOM kill.
			if limit := t.cfg.Source.MaxEventBytes; limit > 0 && len(data) > limit {
				big := &oversizedEvent{size: len(data), limit: limit}
				s.oversized.Store(big)
				return big
			}
			return rowdecode.Signless(e, pos, data)
		},
	}
	rowdecode.Options(&c)
	return c
}

// oversizedEvent is a rows event larger than source.max_event_bytes.
type oversizedEvent struct{ size, limit int }

func (e *oversizedEvent) Error() string {
	return fmt.Sprintf("a binlog rows event of %d bytes is larger than source.max_event_bytes (%d)", e.size, e.limit)
}

// classifyStreamError turns binlog errors the operator must act on into
// fatal errors with the fix.
func (s *stream) classifyStreamError(err error) error {
	// go-mysql wraps the decoder's error with a dump of the whole event:
	// the stream keeps its own record of why.
	if big := s.oversized.Load(); big != nil {
		return fatalf("after the checkpoint %s: %v. It holds one huge row (or update of one): raise source.max_event_bytes above it "+
			"(readside's counterpart of a replica's max_allowed_packet; the tailer holds such an event in memory a few times over), and kafka.max_message_bytes to fit the row's event; "+
			"or exclude the large columns (source.exclude_columns) and restart", s.cp.Position, big)
	}
	var me *mysql.MyError
	if errors.As(err, &me) {
		msg := strings.ToLower(me.Message)
		// MariaDB: ER_SLAVE_SAME_ID (4052); MySQL: 1236 with the same words.
		// Reconnecting would steal the id back and forth forever.
		if strings.Contains(msg, "same server_uuid") || strings.Contains(msg, "same server_id") || strings.Contains(msg, "same server id") {
			return fatalf("another binlog client uses source.server_id %d (%s): give each readside tailer (and every other replica) a unique server_id", s.t.cfg.Source.ServerID, me.Message)
		}
	}
	if errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG {
		msg := strings.ToLower(me.Message)
		switch {
		case strings.Contains(msg, "max_allowed_packet"):
			// The source's dump thread read an event longer than it may
			// send (MySQL: the source's max_allowed_packet; MariaDB reads
			// events up to 1 GiB whatever the setting).
			return fatalf("the source cannot send a binlog event after the checkpoint %s: it is larger than the source's max_allowed_packet (server: %s). "+
				"Fix: raise max_allowed_packet on the source (SET GLOBAL max_allowed_packet=1073741824 and in its config; 1 GiB is the largest), then restart readside; "+
				"readside's own limit is source.max_event_bytes. An event over 1 GiB cannot be replicated at all: skip it by re-snapshotting the table (docs/operations.md, \"oversized rows\")", s.cp.Position, me.Message)
		case strings.Contains(msg, "purged") || strings.Contains(msg, "could not find") || strings.Contains(msg, "not find first log"):
			return fatalf("the source no longer has the binlog at the checkpoint %s (%s): the changes in between are lost to the stream. Recovery: re-snapshot the captured tables, then readside verify --repair every projection for the rows deleted in between (docs/operations.md, \"binlog purged\")", s.cp.Position, me.Message)
		}
		return fatalf("the source refused the binlog stream at %s: %s", s.cp.Position, me.Message)
	}
	return fmt.Errorf("reading binlog: %w", err)
}

// readsRows reports whether the stream uses the rows of tm's table: a
// captured table or a snapshot signal table. (Called from go-mysql's
// parsing goroutine: it only reads what is fixed for the stream's life.)
func (s *stream) readsRows(tm *replication.TableMapEvent) bool {
	if s.isSignal(tm) {
		return true
	}
	_, ok := s.captured[string(tm.Schema)+"."+string(tm.Table)]
	return ok
}

// isSignal reports a table of the snapshot signal database (watermarks,
// requests).
func (s *stream) isSignal(tm *replication.TableMapEvent) bool {
	if string(tm.Schema) != s.t.cfg.Source.Snapshot.SignalDB {
		return false
	}
	tn := string(tm.Table)
	return tn == watermarkTable || tn == requestTable
}
