package sinks_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// TestCutoverFence: a live apply that starts while a cutover holds the
// routing row waits for it, and once the cutover commits a new generation
// it fails with RoutingChanged and commits nothing: no live write lands on
// a shard after its projection moved. For the first reshard and a later
// one.
func TestCutoverFence(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "fence", "id INT PRIMARY KEY, v VARCHAR(20)")
	p, sink := copyTable(t, bed, src, sinkDB, map[string]string{"id": "id", "v": "v"})
	if err := sink.Exec(ctx, sinks.ReshardDDL()); err != nil {
		t.Fatal(err)
	}
	// Created before the fence (Reshard does it when it starts): the
	// live applies share-lock an existing row.
	if err := sink.Shards[0].EnsureRouting(ctx, p.Name, 0, "s", []string{"-"}); err != nil {
		t.Fatal(err)
	}
	for gen := uint64(0); gen < 2; gen++ {
		id := 10 + int(gen)
		c, err := sink.Shards[0].BeginCutover(ctx, p.Name)
		if err != nil {
			t.Fatal(err)
		}
		if c.Generation != gen {
			t.Fatalf("routing generation %d under the fence, want %d", c.Generation, gen)
		}
		b := &projections.Batch{Offsets: event.Offsets{}}
		b.Offsets.Set(p.Topic, 0, int64(100+id))
		b.Writes = []projections.Write{{Kind: projections.Upsert, Key: fmt.Sprint(id), Values: projections.ValuesOf(id, "live"), Version: 1}}
		applied := make(chan error, 1)
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		go func() { applied <- sink.Routed(gen).Apply(actx, p, b) }()
		// Until the apply returns (the fence did not hold it) or waits on
		// a lock (it did).
		var early error
		returned := false
		testbed.Eventually(t, 30*time.Second, func() (bool, string) {
			select {
			case early = <-applied:
				returned = true
				return true, ""
			default:
			}
			var waiting int
			err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'").Scan(&waiting)
			return err == nil && waiting > 0, fmt.Sprintf("%d transactions waiting on a lock (%v)", waiting, err)
		})
		if returned {
			c.Rollback()
			cancel()
			t.Fatalf("generation %d: a live apply went through while the cutover held the routing row (err %v): no fence", gen, early)
		}
		if err := c.Route(ctx, gen+1, "elsewhere", []string{"-"}, false); err != nil {
			t.Fatal(err)
		}
		err = <-applied
		cancel()
		var changed *keyspace.RoutingChanged
		if !errors.As(err, &changed) || changed.Want != gen || changed.Have != gen+1 {
			t.Fatalf("generation %d: the apply held by the fence returned %v, want RoutingChanged %d → %d", gen, err, gen, gen+1)
		}
		var n int
		if err := sink.Shards[0].DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM t_copy WHERE id = ?", id).Scan(&n); err != nil || n != 0 {
			t.Fatalf("generation %d: %d rows of the refused batch committed (%v), want none", gen, n, err)
		}
		offs, err := sink.Offsets(ctx, p)
		if err != nil || offs[p.Topic][0] == int64(100+id) {
			t.Fatalf("generation %d: the refused batch's offset was committed: %v (%v)", gen, offs, err)
		}
	}
}

// TestMergeFill: the cutover makes the fill identity's offsets the
// projection's: where the server served the projection, per partition
// the lower of the two (a partition only one has starts from the
// beginning); where it did not, the fill's as they are, with its
// watermarks. The fill identity's rows are gone either way.
func TestMergeFill(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "merge", "id INT PRIMARY KEY, v VARCHAR(20)")
	p, sink := copyTable(t, bed, src, sinkDB, map[string]string{"id": "id", "v": "v"})
	if err := sink.Exec(ctx, sinks.ReshardDDL()); err != nil {
		t.Fatal(err)
	}
	fill := p.WithProgressName(p.Name + "__reshard")
	sh := sink.Shards[0]
	set := func(name string, parts map[int32]int64) {
		o := event.Offsets{}
		for part, next := range parts {
			o.Set(p.Topic, part, next)
		}
		if err := sh.SetOffsets(ctx, name, o); err != nil {
			t.Fatal(err)
		}
	}
	get := func(pp *projections.Projection) map[int32]int64 {
		o, err := sh.Offsets(ctx, pp)
		if err != nil {
			t.Fatal(err)
		}
		return o[p.Topic]
	}
	for _, tc := range []struct {
		why          string
		served       bool
		live, filled map[int32]int64
		want         string
	}{
		{"a server that served it resumes each partition from the lower", true,
			map[int32]int64{0: 10, 1: 5, 2: 7}, map[int32]int64{0: 8, 1: 9, 3: 4}, "map[0:8 1:5]"},
		{"a server new to it takes the fill's", false,
			nil, map[int32]int64{0: 8, 1: 9, 3: 4}, "map[0:8 1:9 3:4]"},
	} {
		set(p.Name, tc.live)
		set(fill.OffsetsName(), tc.filled)
		if err := sh.Exec(ctx, []string{fmt.Sprintf("REPLACE INTO `_readside_watermarks` (projection, topic, part, gtid, version, source_ts) VALUES ('%s', '%s', 0, 'g', 42, 1)", fill.OffsetsName(), p.Topic)}); err != nil {
			t.Fatal(err)
		}
		c, err := sh.BeginCutover(ctx, p.Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.MergeFill(ctx, fill.OffsetsName(), tc.served); err != nil {
			t.Fatal(err)
		}
		if err := c.Route(ctx, c.Generation+1, "next", []string{"-"}, false); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(get(p)); got != tc.want {
			t.Errorf("%s: offsets %s, want %s", tc.why, got, tc.want)
		}
		if got := get(fill); len(got) != 0 {
			t.Errorf("%s: the fill identity kept offsets %v", tc.why, got)
		}
		var marks int
		if err := sh.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `_readside_watermarks` WHERE projection = ? AND version = 42", p.Name).Scan(&marks); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 0, false: 1}[tc.served]; marks != want {
			t.Errorf("%s: %d watermarks taken over, want %d", tc.why, marks, want)
		}
	}
}

// TestUpsertChunkGuard: the copy never moves a row back: a copied row
// replaces one only when its version is higher, and lands where none is.
func TestUpsertChunkGuard(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "guard", "id INT PRIMARY KEY, v VARCHAR(20)")
	p, sink := copyTable(t, bed, src, sinkDB, map[string]string{"id": "id", "v": "v"})
	sh := sink.Shards[0]
	if err := sh.Exec(ctx, []string{"INSERT INTO t_copy (id, v, _rs_version) VALUES (1, 'newer', 5), (2, 'older', 5)"}); err != nil {
		t.Fatal(err)
	}
	// Read the rows to copy from another table of the same definition.
	if err := sh.Exec(ctx, []string{"CREATE TABLE t_from LIKE t_copy", "INSERT INTO t_from (id, v, _rs_version) VALUES (1, 'stale', 3), (2, 'fresh', 7), (3, 'absent', 1)"}); err != nil {
		t.Fatal(err)
	}
	ts := sinks.TableScan{Table: "t_from", Key: p.Key}
	c, err := sh.ScanChunk(ctx, ts, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.UpsertChunk(ctx, "t_copy", p.Key, []sinks.Guard{{Version: "_rs_version"}}, c); err != nil {
		t.Fatal(err)
	}
	got := testbed.RowsText(t, sh.DB(), "SELECT id, v, _rs_version FROM t_copy ORDER BY id")
	if want := "1|newer|5|\n2|fresh|7|\n3|absent|1|\n"; got != want {
		t.Errorf("after the copy:\n%s\nwant:\n%s", got, want)
	}
	// A cursor survives its round trip through the progress JSON.
	after, err := sinks.DecodeCursor(sinks.EncodeCursor(c.Last()))
	if err != nil {
		t.Fatal(err)
	}
	if rest, err := sh.ScanChunk(ctx, ts, after, 10); err != nil || rest.Len() != 0 {
		t.Errorf("after the last key: %v rows (%v), want none", rest, err)
	}
}

// TestScanChunkFloatExact: a copy stores every FLOAT as it was, the key a
// chunk ends at included. The text protocol prints a FLOAT with six
// digits, so a copy of that text would store another float32 (16777215 as
// 16777200) and a cursor at such a key would skip or repeat rows.
func TestScanChunkFloatExact(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, sinkDB := sourceAndSink(t, bed, "flcopy", "id INT PRIMARY KEY, v VARCHAR(20)")
	_, sink := copyTable(t, bed, src, sinkDB, map[string]string{"id": "id", "v": "v"})
	sh := sink.Shards[0]
	if err := sh.Exec(ctx, []string{
		"CREATE TABLE f_from (k FLOAT NOT NULL PRIMARY KEY, f FLOAT NULL, _rs_version BIGINT UNSIGNED NOT NULL)",
		"CREATE TABLE f_copy LIKE f_from",
		"INSERT INTO f_from VALUES (0.1, 1.2345678, 1), (CAST(0.1 AS FLOAT) * 1.0000001, 16777215, 1), (16777215, 3.4028234e38, 1)," +
			" (16777214, NULL, 1), (1.2345678, 0.1, 1), (1.2345679, -1.2345678, 1), (3.4028234e38, 123456.789, 1)",
	}); err != nil {
		t.Fatal(err)
	}
	// Sharded by k: each row routes as the projector routes its event
	// (the shortest text of the float32).
	ts := sinks.TableScan{Table: "f_from", Key: []string{"k"}, Shard: "k"}
	var after []any
	routed := 0
	for range 10 {
		c, err := sh.ScanChunk(ctx, ts, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if c.Len() == 0 {
			break
		}
		for i := range c.Len() {
			k, _ := strconv.ParseFloat(c.Rows[i][0].(string), 32)
			if want := keyspace.ID(strconv.AppendFloat(nil, k, 'g', -1, 32)); c.IDs[i] != want {
				t.Errorf("row k=%v routes to %016x, the projector to %016x", c.Rows[i][0], c.IDs[i], want)
			}
			routed++
		}
		if err := sh.UpsertChunk(ctx, "f_copy", []string{"k"}, []sinks.Guard{{Version: "_rs_version"}}, c); err != nil {
			t.Fatal(err)
		}
		if after, err = sinks.DecodeCursor(sinks.EncodeCursor(c.Last())); err != nil {
			t.Fatal(err)
		}
	}
	if routed != 7 {
		t.Errorf("%d rows routed, want 7", routed)
	}
	want := testbed.RowsText(t, sh.DB(), "SELECT k + 0e0, f + 0e0 FROM f_from ORDER BY k")
	if got := testbed.RowsText(t, sh.DB(), "SELECT k + 0e0, f + 0e0 FROM f_copy ORDER BY k"); got != want {
		t.Errorf("the copy:\n%s\nwant:\n%s", got, want)
	}
}
