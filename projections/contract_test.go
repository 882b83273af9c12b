package projections

import (
	"bytes"
	"os"
	"testing"

	"github.com/readside/readside/event"
)

// TestDecodeEnvelopesGolden: the projector reads every op's envelope as
// the tailer writes it (event/testdata/envelopes.golden, which cdc's
// TestEnvelopesGolden checks the tailer against), on its fast path and on
// encoding/json's alike.
func TestDecodeEnvelopesGolden(t *testing.T) {
	golden, err := os.ReadFile("../event/testdata/envelopes.golden")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(golden, []byte("\n")), []byte("\n"))
	cases := []struct {
		why           string
		op            event.Op
		before, after bool
	}{
		{"an insert has only the new row", event.OpCreate, false, true},
		{"an update has both rows", event.OpUpdate, true, true},
		{"a delete has only the old row", event.OpDelete, true, false},
		{"a snapshot read has only the row", event.OpRead, false, true},
		{"a truncate has no row and no schema", event.OpTruncate, false, false},
	}
	if len(lines) != len(cases) {
		t.Fatalf("%d envelopes in the golden file, want %d", len(lines), len(cases))
	}
	for i, c := range cases {
		got, err := DecodeEvent(lines[i])
		want, refErr := decodeEventStd(lines[i])
		check(t, lines[i], got, err, want, refErr, false)
		if err != nil {
			t.Fatalf("%s: %v", c.why, err)
		}
		if got.Op != c.op || (got.Before != nil) != c.before || (got.After != nil) != c.after {
			t.Errorf("%s: op %q, before %v, after %v; want %q, %v, %v", c.why, got.Op, got.Before != nil, got.After != nil, c.op, c.before, c.after)
		}
		if got.Version != 1882516407456715+uint64(i) || got.SourceTS != 1763769600 || got.Source == nil || got.Source.GTID != "0-1-977" {
			t.Errorf("%s: version %d, source %+v", c.why, got.Version, got.Source)
		}
		if hasSchema := got.Schema != nil && got.Schema.Columns["total"] == "decimal(10,2)"; hasSchema == (c.op == event.OpTruncate) {
			t.Errorf("%s: schema %+v", c.why, got.Schema)
		}
	}
}

// TestUnknownOpRefused: an op the contract does not name stops decoding,
// naming it, rather than being read as some change.
func TestUnknownOpRefused(t *testing.T) {
	for _, v := range []string{`{"op":"x","version":5}`, `{"op":"cu","version":5}`, `{"version":5}`, `{"op":"C","version":5}`} {
		if e, err := DecodeEvent([]byte(v)); err == nil {
			t.Errorf("%s decoded as op %q", v, e.Op)
		}
	}
}

// TestGroupPerDeployment: the consumer group deals a projection's
// partitions out among one deployment's projectors, so two configs that
// differ only in kafka.topic_prefix (two deployments on one broker) get
// two groups, and one config always the same. The default prefix keeps
// readside-projection-<name>.
func TestGroupPerDeployment(t *testing.T) {
	group := func(prefix string) (string, string) {
		cfg := baseConfig()
		if prefix != "" {
			cfg.Kafka.TopicPrefix = prefix
		}
		ps, err := Compile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return ps[0].Group, ps[0].DLQTopic
	}
	if g, dlq := group(""); g != "readside-projection-messages_by_sender" || dlq != "readside._readside_dlq.messages_by_sender" {
		t.Errorf("default prefix: group %q, dead-letter topic %q", g, dlq)
	}
	a, _ := group("shop-eu")
	again, _ := group("shop-eu")
	b, _ := group("shop-us")
	if a != again {
		t.Errorf("one config, two groups: %q and %q", a, again)
	}
	if a == b {
		t.Errorf("prefixes shop-eu and shop-us share the group %q", a)
	}
	if want := event.Group("shop-eu", "messages_by_sender"); a != want {
		t.Errorf("group %q, want %q", a, want)
	}
}

// TestRenamedProjectionHasItsOwnGroup: a backfill (and a rebuild's shadow,
// through WithName) consumes beside the live projector; in the live
// projector's group each would be dealt only part of the partitions and
// never reach the end offsets it waits for.
func TestRenamedProjectionHasItsOwnGroup(t *testing.T) {
	cfg := baseConfig()
	cfg.Kafka.TopicPrefix = "shop-eu"
	ps, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	live := ps[0]
	for _, c := range []struct {
		why string
		p   *Projection
	}{
		{"a backfill consumes as its own projection", live.Backfill()},
		{"a rebuild's shadow consumes as its own projection", live.WithName(live.Name + "__rebuild")},
	} {
		if c.p.Group == live.Group {
			t.Errorf("%s: it shares the live group %q", c.why, live.Group)
		}
		if want := event.Group("shop-eu", c.p.Name); c.p.Group != want {
			t.Errorf("%s: group %q, want %q", c.why, c.p.Group, want)
		}
		if want := event.DLQTopic("shop-eu", c.p.Name); c.p.DLQTopic != want {
			t.Errorf("%s: dead-letter topic %q, want %q", c.why, c.p.DLQTopic, want)
		}
	}
	if live.Name != "messages_by_sender" || live.Group != event.Group("shop-eu", "messages_by_sender") {
		t.Errorf("renaming changed the live projection: %q in %q", live.Name, live.Group)
	}
}
