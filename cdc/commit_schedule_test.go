package cdc

import (
	"testing"
	"time"
)

// TestCommitSchedulerDecide: when the next Kafka commit is due.
func TestCommitSchedulerDecide(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const every, interval = 100, time.Second
	for _, c := range []struct {
		why      string
		txns     int
		since    time.Time // first complete source transaction
		wanted   bool
		b        batchState
		deadline bool
		want     commitVerdict
	}{
		{"nothing complete: nothing to checkpoint", 0, now, false, batchState{records: every}, true, commitNotDue},
		{"inside a source transaction: a checkpoint is only ever a transaction boundary", 1, now.Add(-time.Hour), false, batchState{records: every, inTxn: true}, true, commitNotDue},
		{"young and small: keep batching", 1, now, false, batchState{records: 1, firstRecord: now}, false, commitNotDue},
		{"full (commit_every): due", 1, now, false, batchState{records: every, firstRecord: now}, false, commitDue},
		{"old (commit_interval) by its first transaction: due", 1, now.Add(-interval), false, batchState{}, false, commitDue},
		{"old by its first record, produced before the first complete transaction: due", 1, now, false, batchState{records: 1, firstRecord: now.Add(-interval)}, false, commitDue},
		{"a deadline passed (idle source, stop): due", 1, now, false, batchState{records: 1, firstRecord: now}, true, commitDue},
		{"owed from before: due at the next transaction end", 1, now, true, batchState{records: 1, firstRecord: now}, false, commitDue},
		{"due by time while one runs: deferred, the stream reads on", 1, now, false, batchState{records: 1, firstRecord: now, commitActive: true}, true, commitDeferred},
		{"due by size while one runs: waits for it, bounding what a backlog holds", 1, now, false, batchState{records: every, firstRecord: now, commitActive: true}, false, commitDue},
		{"due by size while one runs during a snapshot: deferred, the chunks go on into the held records and ride in the next commit", 1, now, false, batchState{records: every, firstRecord: now, commitActive: true, snapshotting: true}, false, commitDeferred},
		{"twice due by size while one runs during a snapshot: due, the held records stop growing", 1, now, false, batchState{records: 2 * every, firstRecord: now, commitActive: true, snapshotting: true}, false, commitDue},
		{"due by size during a snapshot with none running: due", 1, now, false, batchState{records: every, firstRecord: now, snapshotting: true}, false, commitDue},
		{"orphans past the resumed cut not yet published again: a cut now would split their transactions", 1, now.Add(-time.Hour), true, batchState{records: every, firstRecord: now, behind: true}, true, commitNotDue},
	} {
		s := commitScheduler{every: every, interval: interval, txns: c.txns, since: c.since, wanted: c.wanted}
		if got := s.decide(now, c.b, c.deadline); got != c.want {
			t.Errorf("%s: %d, want %d", c.why, got, c.want)
		}
	}
}

// TestCommitSchedulerCommitAt: when the process stage wakes to commit.
func TestCommitSchedulerCommitAt(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const interval = time.Second
	for _, c := range []struct {
		why    string
		txns   int
		wanted bool
		b      batchState
		want   time.Time
	}{
		{"nothing complete: no wake-up", 0, false, batchState{}, time.Time{}},
		{"owed while one runs: wakes on that commit, not on a timer", 1, true, batchState{commitActive: true}, time.Time{}},
		{"between source transactions: as soon as nothing more is ready", 1, false, batchState{}, now.Add(idleCommitAfter)},
		{"inside a source transaction: at commit_interval from the batch's start", 1, false, batchState{inTxn: true}, now.Add(-time.Millisecond).Add(interval)},
		{"the batch's start is its first record when that came first", 1, false, batchState{inTxn: true, records: 1, firstRecord: now.Add(-time.Minute)}, now.Add(-time.Minute).Add(interval)},
		{"an old batch between transactions: at once (its interval passed)", 1, false, batchState{records: 1, firstRecord: now.Add(-time.Minute)}, now.Add(-time.Minute).Add(interval)},
		{"behind orphans: no wake-up (a timer would only spin), the next event decides", 1, false, batchState{behind: true}, time.Time{}},
	} {
		s := commitScheduler{interval: interval, txns: c.txns, since: now.Add(-time.Millisecond), wanted: c.wanted}
		if got := s.commitAt(now, c.b); !got.Equal(c.want) {
			t.Errorf("%s: %v, want %v", c.why, got, c.want)
		}
	}
}

// TestCommitSchedulerCompleted: the checkpoint's position follows the
// completed source transactions.
func TestCommitSchedulerCompleted(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s := commitScheduler{pos: Position{File: "b.000001", Pos: 4}}
	s.completed(t0, "b.000001", 120, 1000)
	s.completed(t0.Add(time.Second), "b.000002", 0, 1001) // no offset (compressed payload, GTID source)
	if s.txns != 2 || !s.since.Equal(t0) || s.ts != 1001 {
		t.Errorf("txns %d since %v ts %d; want 2, the first's completion, the last's source time", s.txns, s.since, s.ts)
	}
	if s.pos.File != "b.000001" || s.pos.Pos != 120 {
		t.Errorf("position %s:%d; want b.000001:120 (offset 0 keeps the last known file/offset: resuming at 0 would replay the file)", s.pos.File, s.pos.Pos)
	}
	s.committed()
	s.completed(t0.Add(time.Minute), "b.000002", 300, 1002)
	if s.txns != 1 || !s.since.Equal(t0.Add(time.Minute)) || s.pos.Pos != 300 {
		t.Errorf("after a commit: txns %d since %v pos %d; want a new batch from the next transaction", s.txns, s.since, s.pos.Pos)
	}
}

// TestStreamBatchSnapshotting: the stream tells the scheduler a snapshot's
// chunks are being read exactly while a chunk reader runs, which is what
// lets a size-due commit be deferred then and only then.
func TestStreamBatchSnapshotting(t *testing.T) {
	s := &stream{pub: &publisher{}, clock: &Clock{}}
	if s.batch().snapshotting {
		t.Error("no chunk reader: snapshotting, want not (a live backlog's size-due commit must wait)")
	}
	s.reader = &chunkReader{}
	if !s.batch().snapshotting {
		t.Error("a chunk reader runs: not snapshotting, want snapshotting")
	}
}
