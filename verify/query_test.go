package verify

import (
	"reflect"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
)

// TestChunkSQL: verify's chunks (lo, hi] and their boundaries, golden.
// Key cells are bound by their column's kind: an integer as a number, a
// text key as a string (compared under its collation, as ORDER BY
// orders), a binary one as bytes.
func TestChunkSQL(t *testing.T) {
	cols := []string{"s.`tenant`", "s.`id`"}
	b := keyBinder{kText, kInt}
	for _, c := range []struct {
		why    string
		lo, hi Key
		want   string
		args   []any
	}{
		{"the whole table", nil, nil, "TRUE", nil},
		{"the first chunk: up to its boundary", nil, Key{"acme", "7"},
			"((s.`tenant` < ?) OR (s.`tenant` = ? AND s.`id` <= ?))", []any{"acme", "acme", int64(7)}},
		{"a chunk between two boundaries", Key{"acme", "7"}, Key{"zeta", "1"},
			"((s.`tenant` > ?) OR (s.`tenant` = ? AND s.`id` > ?)) AND ((s.`tenant` < ?) OR (s.`tenant` = ? AND s.`id` <= ?))",
			[]any{"acme", "acme", int64(7), "zeta", "zeta", int64(1)}},
		{"the last chunk: after its lower boundary", Key{"zeta", "1"}, nil,
			"((s.`tenant` > ?) OR (s.`tenant` = ? AND s.`id` > ?))", []any{"zeta", "zeta", int64(1)}},
	} {
		got, args := rangeWhere(cols, b, c.lo, c.hi)
		if got != c.want || !reflect.DeepEqual(args, c.args) {
			t.Errorf("%s:\n got %s %#v\nwant %s %#v", c.why, got, args, c.want, c.args)
		}
	}
	p := &projections.Projection{SourceDB: "shop", SourceTbl: "orders", Key: []string{"uuid"},
		Columns: []projections.Column{{Name: "uuid", Source: "uuid"}, {Name: "total", Source: "total"}}}
	v := &Verifier{p: p, pl: newPlan(p, nil), keyKinds: keyBinder{kBinary}, opts: Options{ChunkRows: 1000}}
	for _, c := range []struct {
		why  string
		lo   Key
		want string
		args []any
	}{
		{"the first boundary: the 1000th key", nil,
			"SELECT s.`uuid` FROM `shop`.`orders` s ORDER BY s.`uuid` LIMIT 1 OFFSET 999", nil},
		{"the next: 1000 keys after the last, a binary key bound as bytes", Key{"\x00\xff"},
			"SELECT s.`uuid` FROM `shop`.`orders` s WHERE ((s.`uuid` > ?)) ORDER BY s.`uuid` LIMIT 1 OFFSET 999", []any{[]byte{0, 0xff}}},
	} {
		got, args := v.boundarySQL(c.lo)
		if got != c.want || !reflect.DeepEqual(args, c.args) {
			t.Errorf("%s:\n got %s %#v\nwant %s %#v", c.why, got, args, c.want, c.args)
		}
	}
}

func TestBindAndLiteral(t *testing.T) {
	got := keyBinder{kInt, kInt, kText, kBinary, kBit}.bind(Key{"-5", "18446744073709551615", "é", "\x00a", "3"})
	want := []any{int64(-5), uint64(18446744073709551615), "é", []byte("\x00a"), uint64(3)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bind: %#v", got)
	}
	for _, c := range []struct {
		k    kind
		v    string
		want string
	}{
		{kInt, "42", "42"}, {kDecimal, "-0.50", "-0.50"}, {kText, "O'Brien", "_utf8mb4 X'4f27427269656e'"},
		{kBinary, "\x00\xff", "X'00ff'"}, {kInt, "1; DROP TABLE t", "_utf8mb4 X'313b2044524f50205441424c452074'"},
	} {
		if got := literal(c.k, c.v); got != c.want {
			t.Errorf("literal(%v, %q) = %s, want %s", c.k, c.v, got, c.want)
		}
	}
}

// TestShardValueMatchesProjector: verify routes the shard_by cell it
// scans from a server exactly as the projector routes the same value
// from an event (Projection.Writes), or every row would look misplaced.
// That the projector agrees with Vitess is e2e/vitessdiff's proof.
func TestShardValueMatchesProjector(t *testing.T) {
	for _, c := range []struct {
		why   string
		k     kind
		cell  string // as scanned (cellText)
		typ   string // the event schema's type
		event string // the event's JSON value
		bits  int
	}{
		{"integers are their decimal text on both sides", kInt, "12345", "int", `12345`, 0},
		{"negative integers keep their sign", kInt, "-9223372036854775808", "bigint", `-9223372036854775808`, 0},
		{"unsigned beyond int64", kInt, "18446744073709551615", "bigint unsigned", `18446744073709551615`, 0},
		{"DECIMAL is text with its scale; a string in events", kDecimal, "-0.50", "decimal(5,2)", `"-0.50"`, 0},
		{"strings are UTF-8 bytes; events escape them", kText, "ünï\\\"code😀", "varchar", `"ünï\\\"code\ud83d\ude00"`, 0},
		{"binary values are bytes; base64 in events", kBinary, "\x00\x01\xff\x00", "binary(4)", `"AAH/AA=="`, 0},
		{"date-times are MySQL's text with their fraction", kTemporal, "2020-01-02 03:04:05.012300", "datetime(6)", `"2020-01-02 03:04:05.012300"`, 0},
		{"BIT is a number here and in events, its bytes to Vitess", kBit, "5", "bit(12)", `5`, 12},
	} {
		p := shardedByK(t)
		e, err := event.DecodeEvent([]byte(`{"op":"c","version":1,"after":{"k":` + c.event + `},"schema":{"version":"x","columns":{"k":"` + c.typ + `"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		ws, err := p.Writes(e)
		if err != nil || len(ws) != 1 {
			t.Fatalf("%s: writes %+v, %v", c.why, ws, err)
		}
		if got := keyspace.ID(shardValue(c.k, c.cell, c.bits)); got != ws[0].KeyspaceID {
			t.Errorf("%s: verify routes %q to %016x, the projector %s to %016x", c.why, c.cell, got, c.event, ws[0].KeyspaceID)
		}
	}
}

// TestFloatShardValueMatchesProjector: a FLOAT shard_by value routes by
// the shortest text of its float32 everywhere — the projector (which binds
// it as a double's text), verify and a reshard's copy (which read it as a
// double, `+ 0e0`) — and as the projector routed it before it bound
// doubles (the events' own text), so no row moves shard on an upgrade.
func TestFloatShardValueMatchesProjector(t *testing.T) {
	p := shardedByK(t)
	for _, c := range []struct{ cell, event string }{
		{"1.2345677614212036", "1.2345678"},
		{"16777215", "1.6777215e+07"},
		{"3.4028234663852886e38", "3.4028235e+38"},
		{"0.10000000149011612", "0.1"},
		{"-1e-30", "-1e-30"},
	} {
		e, err := event.DecodeEvent([]byte(`{"op":"c","version":1,"after":{"k":` + c.event + `},"schema":{"version":"x","columns":{"k":"float"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		ws, err := p.Writes(e)
		if err != nil || len(ws) != 1 {
			t.Fatalf("%s: writes %+v, %v", c.event, ws, err)
		}
		if before := keyspace.ID([]byte(c.event)); ws[0].KeyspaceID != before {
			t.Errorf("%s: the projector routes it to %016x, before it bound doubles to %016x", c.event, ws[0].KeyspaceID, before)
		}
		if got := keyspace.ID(projections.Float32ShardText(shardValue(kNumber, c.cell, 0))); got != ws[0].KeyspaceID {
			t.Errorf("%s: verify routes %q to %016x, the projector to %016x", c.event, c.cell, got, ws[0].KeyspaceID)
		}
	}
}

// shardedByK is a copy of shop.t keyed and sharded by its column k over
// two shards.
func shardedByK(t *testing.T) *projections.Projection {
	t.Helper()
	cfg := config.Default()
	cfg.Source.Tables = []string{"shop.t"}
	cfg.Sinks = map[string]config.Sink{"reads": {Shards: []config.Shard{{KeyRange: "-80", DSN: "a"}, {KeyRange: "80-", DSN: "b"}}}}
	cfg.Projections = map[string]config.Projection{"t": {From: "shop.t", Sink: "reads", Key: []string{"k"}, ShardBy: "k", Columns: map[string]string{"k": "k"}}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ps[0]
}
