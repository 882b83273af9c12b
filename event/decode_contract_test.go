package event

import (
	"bytes"
	"os"
	"testing"
)

// TestDecodeEnvelopesGolden: the projector reads every op's envelope as
// the tailer writes it (event/testdata/envelopes.golden, which cdc's
// TestEnvelopesGolden checks the tailer against), on its fast path and on
// encoding/json's alike.
func TestDecodeEnvelopesGolden(t *testing.T) {
	golden, err := os.ReadFile("testdata/envelopes.golden")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(golden, []byte("\n")), []byte("\n"))
	cases := []struct {
		why           string
		op            Op
		before, after bool
	}{
		{"an insert has only the new row", OpCreate, false, true},
		{"an update has both rows", OpUpdate, true, true},
		{"a delete has only the old row", OpDelete, true, false},
		{"a snapshot read has only the row", OpRead, false, true},
		{"a truncate has no row and no schema", OpTruncate, false, false},
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
		if hasSchema := got.Schema != nil && got.Schema.Columns["total"] == "decimal(10,2)"; hasSchema == (c.op == OpTruncate) {
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
