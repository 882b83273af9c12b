package sinks_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// TestApplyShrinksOversizedBatch: a batch whose rows would make a
// statement larger than the sink's max_allowed_packet is cut into
// statements that fit (found by this test: the driver reports an
// oversized prepared statement as a bad connection, which was retried
// forever), and the offsets are committed with the rows.
func TestApplyShrinksOversizedBatch(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	// Wide rows of numbers: the driver sends strings of a prepared
	// statement as long data, in chunks, but numbers travel inside the
	// execute packet, which max_allowed_packet bounds.
	var defs []string
	cols := map[string]string{"id": "id"}
	for i := range 40 {
		defs = append(defs, fmt.Sprintf("c%d BIGINT NOT NULL", i))
		cols[fmt.Sprintf("c%d", i)] = fmt.Sprintf("c%d", i)
	}
	src, sinkDB := sourceAndSink(t, bed, "f", "id INT PRIMARY KEY, "+strings.Join(defs, ", "))
	// 64 KiB: one 500-row statement of 41 numbers a row (~180 KB) cannot pass.
	setGlobal(t, bed, "max_allowed_packet", 65536)

	p, sink := copyTable(t, bed, src, sinkDB, cols) // connects after the change: learns 64 KiB
	b := &projections.Batch{Offsets: event.Offsets{}}
	b.Offsets.Set(p.Topic, 0, 2001)
	for i := range 2000 {
		vals := []any{i}
		for c := range 40 {
			vals = append(vals, int64(i)*1_000_000_007+int64(c))
		}
		b.Writes = append(b.Writes, projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(i), Values: projections.ValuesOf(vals...), Version: uint64(1000 + i)})
	}
	actx, cancel := context.WithTimeout(ctx, 60*time.Second) // a retry loop must fail the test, not hang it
	defer cancel()
	if err := sink.Apply(actx, p, b); err != nil {
		t.Fatalf("a batch over max_allowed_packet must be cut into statements that fit, got %v", err)
	}
	var n int
	if err := sink.Shards[0].DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM t_copy").Scan(&n); err != nil {
		t.Fatal(err)
	}
	offs, err := sink.Offsets(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2000 || offs[p.Topic][0] != 2001 {
		t.Fatalf("%d rows and offset %d after the shrunk batch, want 2000 and 2001", n, offs[p.Topic][0])
	}
	t.Logf("2000 rows of 41 numbers applied under max_allowed_packet=64KiB; offsets committed")
}

// TestApplyRowLongerOnceEscaped: a row that fits max_allowed_packet as
// it is but not once its quotes are escaped (each doubles) still lands,
// byte for byte: the pipeline sends that statement alone, with
// parameters, which the driver prepares — the values then travel outside
// the statement's packet.
func TestApplyRowLongerOnceEscaped(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "e", "id INT PRIMARY KEY, v MEDIUMTEXT")
	setGlobal(t, bed, "max_allowed_packet", 65536)
	p, sink := copyTable(t, bed, src, sinkDB, map[string]string{"id": "id", "v": "v"}) // learns 64 KiB
	// 26,000 bytes, 52,000 escaped; the second row's is over 64 KiB escaped.
	quotes := strings.Repeat(`'\`, 13000)
	b := &projections.Batch{Offsets: event.Offsets{}}
	b.Offsets.Set(p.Topic, 0, 3)
	for i, v := range []string{quotes, quotes + quotes[:10000], "short"} {
		vals := map[string]any{"id": i + 1, "v": v}
		var row []any
		for _, c := range p.Columns {
			row = append(row, vals[c.Name])
		}
		b.Writes = append(b.Writes, projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(i + 1), Values: projections.ValuesOf(row...), Version: uint64(10 + i)})
	}
	if err := sink.Apply(ctx, p, b); err != nil {
		t.Fatalf("rows that fit max_allowed_packet unescaped must land, got %v", err)
	}
	for i, want := range []string{quotes, quotes + quotes[:10000], "short"} {
		var got string
		if err := sink.Shards[0].DB().QueryRowContext(ctx, "SELECT v FROM t_copy WHERE id = ?", i+1).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("row %d: %d bytes stored, want %d", i+1, len(got), len(want))
		}
	}
}

// TestReadTableWithSecondUniqueKeyRefused: ON DUPLICATE KEY UPDATE matches
// any unique key, so a read table with one besides the primary key is
// refused with the fix.
func TestReadTableWithSecondUniqueKeyRefused(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "u", "id INT PRIMARY KEY, email VARCHAR(100) NOT NULL")
	p, sink := copyTable(t, bed, src, sinkDB, map[string]string{"id": "id", "email": "email"})
	if err := sink.CheckReadTable(ctx, p); err != nil {
		t.Fatalf("readside's own DDL refused: %v", err)
	}
	if err := bed.MySQL.Exec(ctx, "ALTER TABLE `"+sinkDB+"`.t_copy ADD UNIQUE KEY by_email (email)"); err != nil {
		t.Fatal(err)
	}
	err := sink.CheckReadTable(ctx, p)
	if err == nil || !strings.Contains(err.Error(), "by_email") || !strings.Contains(err.Error(), "non-unique") {
		t.Fatalf("a second unique key gave %v, want a refusal naming it and the fix", err)
	}
	t.Logf("refused: %v", err)
}

// TestApplyRetriesLockWaitTimeout: a batch that hits a lock-wait timeout
// (another session holds the row) is retried until the lock is released,
// then applied with its offsets.
func TestApplyRetriesLockWaitTimeout(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "l", "id INT PRIMARY KEY, v INT NOT NULL")
	setGlobal(t, bed, "innodb_lock_wait_timeout", 1)
	p, sink := copyTable(t, bed, src, sinkDB, map[string]string{"id": "id", "v": "v"}) // sessions get the 1 s timeout
	up := func(v, version int) *projections.Batch {
		b := &projections.Batch{Offsets: event.Offsets{}, Writes: []projections.Write{{Kind: projections.Upsert, Key: "1", Values: projections.ValuesOf(1, v), Version: uint64(version)}}}
		b.Offsets.Set(p.Topic, 0, int64(version))
		return b
	}
	if err := sink.Apply(ctx, p, up(1, 10)); err != nil {
		t.Fatal(err)
	}
	// Another session holds the row for 4 s.
	holder, err := bed.MySQL.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var v int
	if err := holder.QueryRowContext(ctx, "SELECT v FROM `"+sinkDB+"`.t_copy WHERE id = 1 FOR UPDATE").Scan(&v); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(4 * time.Second); _ = holder.Commit() }()
	start := time.Now()
	actx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := sink.Apply(actx, p, up(2, 11)); err != nil {
		t.Fatalf("a batch behind a lock-wait timeout must be retried, got %v", err)
	}
	took := time.Since(start)
	if err := sink.Shards[0].DB().QueryRowContext(ctx, "SELECT v FROM t_copy WHERE id = 1").Scan(&v); err != nil {
		t.Fatal(err)
	}
	offs, err := sink.Offsets(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if v != 2 || offs[p.Topic][0] != 11 || took < 3*time.Second {
		t.Fatalf("after %s: v=%d offset %d, want v=2 and offset 11 once the lock was released (after ~4 s)", took, v, offs[p.Topic][0])
	}
	t.Logf("applied after %s of lock-wait timeouts and retries", took.Round(100*time.Millisecond))
}

// TestFailedBatchLeavesNothing: a batch whose second statement fails
// (a value too long, after a first statement of 500 good rows) changes
// nothing and moves no offset, and the connection it ran on goes back to
// the pool outside any transaction: the batches' statements are sent
// together (pipeline), so the COMMIT after the failing statement never
// runs, and a connection left inside the transaction would commit its
// first 500 rows with the next batch's START TRANSACTION.
//
// With multiStatements=false in the DSN (the operator's opt-out, for a
// proxy that refuses such packets) the same holds, a statement per round
// trip.
func TestFailedBatchLeavesNothing(t *testing.T) {
	for name, params := range map[string]string{"pipelined": "", "multiStatements=false": "?multiStatements=false"} {
		t.Run(name, func(t *testing.T) { failedBatchLeavesNothing(t, params) })
	}
}

func failedBatchLeavesNothing(t *testing.T, params string) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "x", "id INT PRIMARY KEY, s VARCHAR(10) NOT NULL")
	// Sessions opened from here on wait 1 s for a row lock: a failed
	// batch's transaction left open would hold its rows' locks, and the
	// write of one of its keys below would then never get through.
	setGlobal(t, bed, "innodb_lock_wait_timeout", 1)
	p, sink := copyTableAs(t, bed, src, sinkDB, "t_copy", map[string]string{"id": "id", "s": "s"}, params)
	bad := &projections.Batch{Offsets: event.Offsets{}}
	bad.Offsets.Set(p.Topic, 0, 600)
	for i := range 501 {
		v := "ok"
		if i == 500 {
			v = strings.Repeat("too long ", 5)
		}
		bad.Writes = append(bad.Writes, projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(i), Values: projections.ValuesOf(i, v), Version: uint64(1000 + i)})
	}
	failed := sink.Apply(ctx, p, bad)
	if failed == nil || !sinks.Rejected(failed) {
		t.Fatalf("a value too long for its column gave %v, want the sink's refusal", failed)
	}
	for i := range 4 { // the pool hands out its idle connections again
		good := &projections.Batch{Offsets: event.Offsets{}, Writes: []projections.Write{{Kind: projections.Upsert, Key: fmt.Sprint(1000 + i), Values: projections.ValuesOf(1000+i, "good"), Version: 5000}}}
		good.Offsets.Set(p.Topic, 0, int64(10+i))
		if err := sink.Apply(ctx, p, good); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := sink.Shards[0].DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM t_copy").Scan(&n); err != nil {
		t.Fatal(err)
	}
	offs, err := sink.Offsets(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 || offs[p.Topic][0] != 13 {
		t.Fatalf("%d rows and offset %d after a failed batch and four good ones, want 4 and 13 (none of the failed batch's rows)", n, offs[p.Topic][0])
	}
	// Key 0 was written by the failed batch: its lock must be gone with
	// the rolled-back transaction (the sink retries lock waits, so a
	// transaction left open shows as this deadline passing).
	lockCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	again := &projections.Batch{Offsets: event.Offsets{}, Writes: []projections.Write{{Kind: projections.Upsert, Key: "0", Values: projections.ValuesOf(0, "again"), Version: 6000}}}
	again.Offsets.Set(p.Topic, 0, 14)
	if err := sink.Apply(lockCtx, p, again); err != nil {
		t.Fatalf("writing key 0 after the failed batch that wrote it: %v (its transaction was not rolled back and still holds the row)", err)
	}
	t.Logf("failed batch: %v; nothing of it committed", failed)
}

// TestApplyQuestionMarkInNames: a batch's statements go out together with
// their parameters written into the text by the driver, which must tell a
// placeholder from a '?' in a quoted name or a comment (go-sql-driver
// 1.10 does; a driver that counted every '?' would fall back to a
// prepared statement, which cannot hold several).
func TestApplyQuestionMarkInNames(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "q", "id INT PRIMARY KEY, v INT NOT NULL")
	p, sink := copyTableAs(t, bed, src, sinkDB, "why?", map[string]string{"id": "id", "v?": "v"}, "")
	b := &projections.Batch{Offsets: event.Offsets{}}
	b.Offsets.Set(p.Topic, 0, 7)
	for i := range 3 {
		b.Writes = append(b.Writes, projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(i), Values: projections.ValuesOf(i, 10*i), Version: uint64(100 + i)})
	}
	b.Writes = append(b.Writes, projections.Write{Kind: projections.Delete, Key: "9", Values: projections.ValuesOf(9), Version: 200})
	actx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := sink.Apply(actx, p, b); err != nil {
		t.Fatalf("a projection named %q with a column %q: %v", p.Name, "v?", err)
	}
	var n, sum int
	if err := sink.Shards[0].DB().QueryRowContext(ctx, "SELECT COUNT(*), SUM(`v?`) FROM `"+p.Table+"`").Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	offs, err := sink.Offsets(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 || sum != 30 || offs[p.Topic][0] != 7 {
		t.Fatalf("%d rows summing to %d, offset %d; want 3, 30 and 7", n, sum, offs[p.Topic][0])
	}
}

// sourceAndSink creates the databases <prefix>src, with a table t of the
// given column definitions, and <prefix>sink.
func sourceAndSink(t *testing.T, bed *testbed.Bed, prefix, columns string) (src, sinkDB string) {
	t.Helper()
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, prefix+"src")
	if err != nil {
		t.Fatal(err)
	}
	if sinkDB, err = bed.MySQL.CreateDatabase(ctx, prefix+"sink"); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.t ("+columns+")"); err != nil {
		t.Fatal(err)
	}
	return src, sinkDB
}

// copyTable declares t_copy, a copy of src.t keyed by id with cols, opens
// its sink (a new connection: it sees global settings changed before)
// and creates the read table.
func copyTable(t *testing.T, bed *testbed.Bed, src, sinkDB string, cols map[string]string) (*projections.Projection, *sinks.Sharded) {
	t.Helper()
	return copyTableAs(t, bed, src, sinkDB, "t_copy", cols, "")
}

// setGlobal sets a server variable for the test and puts its value back
// after it.
func setGlobal(t *testing.T, bed *testbed.Bed, name string, value int) {
	t.Helper()
	var old int
	if err := bed.MySQL.DB().QueryRowContext(t.Context(), "SELECT @@GLOBAL."+name).Scan(&old); err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(t.Context(), fmt.Sprintf("SET GLOBAL %s = %d", name, value)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.MySQL.Exec(context.Background(), fmt.Sprintf("SET GLOBAL %s = %d", name, old)) })
}

// copyTableAs is copyTable with the projection's name (its read table's
// too) and DSN parameters for the sink ("?a=b").
func copyTableAs(t testing.TB, bed *testbed.Bed, src, sinkDB, name string, cols map[string]string, params string) (*projections.Projection, *sinks.Sharded) {
	t.Helper()
	cfg := config.Default()
	cfg.Source.Tables = []string{src + ".t"}
	cfg.Sinks = map[string]config.Sink{"s": {DSN: config.Secret(bed.MySQL.AdminDSN() + sinkDB + params)}}
	cfg.Projections = map[string]config.Projection{name: {From: src + ".t", Sink: "s", Key: []string{"id"}, Columns: cols}}
	return openProjection(t, bed, cfg)
}

// openProjection compiles cfg's one projection, types it against the
// source, opens its sink "s" and creates its tables there.
func openProjection(t testing.TB, bed *testbed.Bed, cfg config.Config) (*projections.Projection, *sinks.Sharded) {
	t.Helper()
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	types, err := ps[0].SourceColumns(t.Context(), bed.MySQL.DB())
	if err != nil {
		t.Fatal(err)
	}
	sink, err := sinks.OpenSharded(t.Context(), "s", cfg.Sinks["s"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	if err := sink.Exec(t.Context(), sinks.DDL(ps[0], types)); err != nil {
		t.Fatal(err)
	}
	return ps[0], sink
}
