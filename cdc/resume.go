package cdc

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
)

// prepareStream loads the checkpoint (fencing older producers), checks it
// against the source and builds the stream that resumes from it.
func (t *Tailer) prepareStream(ctx context.Context, env *runEnv) (*stream, error) {
	cp, found, err := t.startingPoint(ctx, env)
	if err != nil {
		return nil, err
	}
	if err := checkResumable(ctx, env.src, cp); err != nil {
		return nil, err
	}
	orphans, err := env.pub.startPublished(ctx, cp, env.topics, env.partitions)
	if err != nil {
		return nil, err
	}
	if orphans > cp.LastVersion {
		t.log.Info("committed events past the checkpoint (a crash between committing events and their checkpoint): the first commit waits until they are published again",
			"checkpoint_version", cp.LastVersion, "orphan_version", orphans)
	}
	s := &stream{
		t: t, pub: env.pub, src: env.src, cp: cp,
		captured: env.captured, partitions: env.partitions, excluded: env.excluded, charsets: env.charsets, collations: env.collations,
		tables: map[uint64]*table{}, keys: t.cfg.Source.Keys, orphans: orphans,
		slab: newRecyclingSlab(), recs: newRecordSlices(),
	}
	if s.rowEnds, err = env.src.rowEndColumns(ctx, slices.Collect(maps.Keys(s.captured))); err != nil {
		return nil, err
	}
	if len(s.keys) > 0 {
		s.guard = newKeyGuard(s.keys)
		if err := s.guard.load(ctx, env.src); err != nil {
			return nil, err
		}
	}
	// What the stream needs, not the server's current setting: a
	// checkpoint taken while the tailer kept a schema history is followed
	// by binlog written without column names, even when the source is FULL
	// now (the switch check asks for); those events use the history until
	// the binlog names columns (stream.rows).
	s.untilNamed = env.full && found && cp.SchemaHistory
	if s.untilNamed {
		env.pub.keepSchemaHistory(event.SchemaHistoryTopic(t.cfg.Kafka.TopicPrefix))
		t.log.Info("binlog_row_metadata is FULL now, but the binlog after the checkpoint may predate the switch: using the schema history until the binlog names columns", "position", cp.Position)
	}
	if !env.full || s.untilNamed {
		if s.schema, s.historyKeys, cp, err = t.prepareSchema(ctx, env.src, env.pub, cp, found, env.trackedDBs); err != nil {
			return nil, err
		}
	}
	s.cp, s.clock = cp, NewClock(cp.LastVersion)
	t.load.resume(ctx, env.src, &cp, env.captured, !found)
	s.cp = cp
	s.snapshots, s.covered, s.lastRequest = slices.Clone(cp.Snapshots), slices.Clone(cp.Tables), cp.LastRequest
	s.finished = slices.Clone(cp.Finished)
	s.keyCols = maps.Clone(cp.Keys)
	s.sched = newCommitScheduler(t.cfg.Kafka)
	s.meta = newTxnMeta(t.cfg)
	return s, nil
}

// startingPoint is the checkpoint the stream resumes from: the one in
// Kafka, or the end of the binlog (with the initial snapshots queued) when
// there is none; with the tables added to source.tables since it covered.
func (t *Tailer) startingPoint(ctx context.Context, env *runEnv) (cp Checkpoint, found bool, err error) {
	cp, found, err = env.pub.loadCheckpoint(ctx)
	if err != nil {
		return cp, false, err
	}
	if !found {
		pos, err := env.src.currentPosition(ctx)
		if err != nil {
			return cp, false, err
		}
		cp = Checkpoint{Position: pos}
		if t.cfg.Source.Snapshot.Mode == config.SnapshotInitial {
			for _, name := range t.cfg.Source.Tables {
				if !slices.Contains(env.missing, name) {
					cp.Snapshots = append(cp.Snapshots, SnapshotTask{Table: name})
				}
			}
		}
		t.log.Info("no checkpoint: starting at the end of the binlog", "position", pos, "initial_snapshots", len(cp.Snapshots))
	} else {
		t.log.Info("resuming from checkpoint", "position", cp.Position, "last_version", cp.LastVersion)
		t.committed(cp)
	}
	queued := len(cp.Snapshots)
	cp, uncovered := coverTables(cp, found, t.cfg.Source.Tables, env.missing, t.cfg.Source.Snapshot.Mode == config.SnapshotInitial)
	for _, task := range cp.Snapshots[queued:] {
		t.log.Info("table added to source.tables since the last start: snapshotting its existing rows", "table", task.Table)
	}
	for _, name := range uncovered {
		t.log.Warn("table added to source.tables since the last start: its existing rows are not published (source.snapshot.mode is never); only changes from now on are",
			"table", name, "fix", "readside snapshot --table "+name)
	}
	return cp, found, nil
}

// checkResumable refuses a checkpoint the source cannot resume: its
// binlog purged, another flavor, or a file/offset of another server.
func checkResumable(ctx context.Context, src *sourceDB, cp Checkpoint) error {
	if err := src.checkNotPurged(ctx, cp.Position); errors.Is(err, ErrPurged) {
		return fatalf("the source no longer has the binlog after the checkpoint (%v): the changes in between are lost to the stream. Recovery: re-snapshot the captured tables, then readside verify --repair every projection for the rows deleted in between (docs/operations.md, \"binlog purged\")", err)
	} else if err != nil {
		return err
	}
	if cp.Position.Flavor != src.flavor {
		return fatalf("checkpoint was written for a %s source, but the source is %s: use a new kafka.transactional_id or topic_prefix", cp.Position.Flavor, src.flavor)
	}
	return checkSameServer(cp, src)
}

// checkSameServer refuses to resume a file/offset-only checkpoint on
// another server than the one it was read from: the same file name and
// offset there are different transactions (or the middle of one), and
// resuming would silently skip or repeat changes. A GTID checkpoint is
// valid on any server of the topology (failover).
func checkSameServer(cp Checkpoint, src *sourceDB) error {
	if cp.Position.GTID != "" || cp.ServerID == 0 {
		return nil
	}
	if cp.ServerID != src.serverID || cp.ServerUUID != src.serverUUID {
		return fatalf("the checkpoint is a binlog file/offset (%s) on the server with server_id %d%s, but the source now is server_id %d%s: "+
			"file offsets do not carry over to another server. Fix: point source.dsn back at that server; or, to fail over, enable GTIDs on the source (MySQL gtid_mode=ON; MariaDB always has them) so checkpoints carry a GTID set, "+
			"and re-snapshot: start with a new kafka.transactional_id (or topic_prefix) and source.snapshot.mode=initial",
			cp.Position, cp.ServerID, uuidNote(cp.ServerUUID), src.serverID, uuidNote(src.serverUUID))
	}
	return nil
}

func uuidNote(uuid string) string {
	if uuid == "" {
		return ""
	}
	return " (server_uuid " + uuid + ")"
}
