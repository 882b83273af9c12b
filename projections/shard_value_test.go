package projections

import (
	"fmt"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/keyspace"
)

// shardWrite routes one insert of value (JSON, as the tailer writes it) in
// a column of type typ through a projection sharded by that column.
func shardWrite(t *testing.T, typ, value string) Write {
	t.Helper()
	cfg := config.Default()
	cfg.Source.Tables = []string{"shop.t"}
	cfg.Sinks = map[string]config.Sink{"reads": {Shards: []config.Shard{{KeyRange: "-80", DSN: "a"}, {KeyRange: "80-", DSN: "b"}}}}
	cfg.Projections = map[string]config.Projection{"t": {From: "shop.t", Sink: "reads", Key: []string{"k"}, ShardBy: "k", Columns: map[string]string{"k": "k"}}}
	ps, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := event.DecodeEvent([]byte(`{"op":"c","version":1,"after":{"k":` + value + `},"schema":{"version":"x","columns":{"k":"` + typ + `"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := ps[0].Writes(e)
	if err != nil || len(ws) != 1 {
		t.Fatalf("%s %s: writes %+v, %v", typ, value, ws, err)
	}
	return ws[0]
}

// TestKeyspaceIDVitessVectors pins keyspace ids to the ones Vitess's own
// tests expect of its xxhash vindex (vindexes/xxhash_test.go, v0.24.4),
// routed from events as the projector routes them. e2e/vitessdiff checks
// many more values against Vitess's code itself.
func TestKeyspaceIDVitessVectors(t *testing.T) {
	for _, c := range []struct {
		why, typ, value, want string
	}{
		{"a string hashes its bytes", "varchar", `"test1"`, "d01ab7e4d6978f0b"},
		{"a long string too", "varchar", `"testaverylongvaluetomakesurethisworks"`, "81d8c38e0d850e6a"},
		{"an integer hashes its decimal text", "int", `1`, "d46405367612b4b7"},
		{"a negative one keeps its sign", "bigint", `-1`, "d8e2a6a7c8c7623d"},
		{"the largest unsigned", "bigint unsigned", `18446744073709551615`, "477cfa8d6d8f1f8d"},
		{"the largest signed", "bigint", `9223372036854775807`, "b37eb01f7bffafd8"},
		{"the smallest signed", "bigint", `-9223372036854775808`, "102c27ddb26a609e"},
		{"a string of digits lands with the number", "varchar", `"1"`, "d46405367612b4b7"},
	} {
		if got := fmt.Sprintf("%016x", shardWrite(t, c.typ, c.value).KeyspaceID); got != c.want {
			t.Errorf("%s: %s %s has keyspace id %s, Vitess %s", c.why, c.typ, c.value, got, c.want)
		}
	}
	// Vitess hashes NULL as no bytes.
	if got := fmt.Sprintf("%016x", keyspace.ID(ShardValue(Value{}, 0))); got != "99e9d85137db46ef" {
		t.Errorf("NULL has keyspace id %s, Vitess 99e9d85137db46ef", got)
	}
}

// TestShardValue: the bytes hashed are MySQL's rendering of the column's
// type, not the event's JSON encoding of it.
func TestShardValue(t *testing.T) {
	for _, c := range []struct {
		why, typ, value, want string
	}{
		{"binary is its bytes, not its base64", "varbinary", `"AP8A"`, "\x00\xff\x00"},
		{"BINARY(n) keeps its zero padding", "binary(4)", `"YQAAAA=="`, "a\x00\x00\x00"},
		{"DECIMAL keeps its scale", "decimal(5,2)", `"-0.50"`, "-0.50"},
		{"a string is unescaped to its UTF-8", "varchar", `"\u00e9\"\ud83d\ude00"`, "é\"😀"},
		{"DATETIME keeps its fraction digits", "datetime(6)", `"2020-01-02 03:04:05.000000"`, "2020-01-02 03:04:05.000000"},
		{"BIT(n) is ceil(n/8) big-endian bytes", "bit(12)", `5`, "\x00\x05"},
		{"BIT(1) one byte", "bit(1)", `1`, "\x01"},
		{"BIT(64) all eight", "bit(64)", `18446744073709551615`, "\xff\xff\xff\xff\xff\xff\xff\xff"},
	} {
		w := shardWrite(t, c.typ, c.value)
		if want := keyspace.ID([]byte(c.want)); w.KeyspaceID != want {
			t.Errorf("%s: %s %s routes as %016x, want the id of %q, %016x", c.why, c.typ, c.value, w.KeyspaceID, c.want, want)
		}
	}
}

// TestKeyRangeBytes: membership compares the id's bytes with the range's
// hex bounds from the first byte on, as Vitess does (not the hash as a
// little-endian number).
func TestKeyRangeBytes(t *testing.T) {
	lo, _ := keyspace.ParseRange("-80")
	hi, _ := keyspace.ParseRange("80-")
	mid, _ := keyspace.ParseRange("40-80")
	// "test1" is d0 1a …: first byte 0xd0, so 80-, though its xxhash64
	// (0x0b8f97d6e4b71ad0) is below 2^63.
	id := shardWrite(t, "varchar", `"test1"`).KeyspaceID
	if lo.Contains(id) || !hi.Contains(id) {
		t.Errorf("test1 (%016x) must be on 80- only", id)
	}
	if !mid.Contains(0x4000000000000000) || mid.Contains(0x8000000000000000) || !mid.Contains(0x7fffffffffffffff) {
		t.Error("40-80 holds ids from 40 00… up to, not including, 80 00…")
	}
}
