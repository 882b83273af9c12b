package cdc

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/event"
)

// TestCheckpointCutFields: the tailer's checkpoint and a reader's
// event.Cut agree on the names of the fields a transactional sink reads,
// and the fields a row-mode tailer does not fill stay out of the record.
func TestCheckpointCutFields(t *testing.T) {
	pos := Position{Flavor: "mariadb", GTID: "0-1-42", File: "binlog.000002", Pos: 900}
	cases := []struct {
		name    string
		cp      Checkpoint
		absent  []string // JSON members that must not be written
		present []string
	}{
		{"a transactional sink's checkpoint carries the cut, the source time and the count",
			Checkpoint{Position: pos, SourceTS: 1795000000, Transactions: 17, Published: event.Offsets{"p.shop.orders": {0: 12, 2: 0}, "p.shop.lines": {1: 5}}},
			nil, []string{`"source_ts":1795000000`, `"transactions":17`, `"published":{`, `"2":0`}},
		{"a row-mode tailer writes no published member: readers tell 'no cut' from 'an empty cut'",
			Checkpoint{Position: pos, SourceTS: 1795000000, Transactions: 3},
			[]string{`"published"`}, []string{`"transactions":3`}},
		{"before the first source transaction there is no source time or count to write",
			Checkpoint{Position: pos},
			[]string{`"published"`, `"source_ts"`, `"transactions"`}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stored, err := encodeCheckpoint(c.cp)
			if err != nil {
				t.Fatal(err)
			}
			body, err := event.OpenCheckpoint(stored)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range c.absent {
				if strings.Contains(string(body), m) {
					t.Errorf("%s written: %s", m, body)
				}
			}
			for _, m := range c.present {
				if !strings.Contains(string(body), m) {
					t.Errorf("%s missing: %s", m, body)
				}
			}
			back, err := decodeCheckpoint(stored)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, c.cp) {
				t.Errorf("tailer round trip: %+v, want %+v", back, c.cp)
			}
			cut, err := event.DecodeCut(stored)
			if err != nil {
				t.Fatal(err)
			}
			if cut.Position.GTID != pos.GTID || cut.Position.File != pos.File || cut.Position.Pos != pos.Pos || cut.SourceTS != c.cp.SourceTS ||
				cut.Transactions != c.cp.Transactions || !reflect.DeepEqual(cut.Published, c.cp.Published) {
				t.Errorf("as a cut: %+v, want the checkpoint's %+v", cut, c.cp)
			}
		})
	}
}

// TestCheckpointOfOlderVersion: a checkpoint written before the cut
// existed reads with no cut, no source time and a zero count, which
// startPublished and the transaction count start from.
func TestCheckpointOfOlderVersion(t *testing.T) {
	body := `{"position":{"flavor":"mariadb","gtid":"0-1-5","file":"binlog.000001","pos":99},"last_version":7,"written_at":"2026-11-22T00:32:29Z"}`
	stored, err := event.SealCheckpoint([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := decodeCheckpoint(stored)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Published != nil || cp.SourceTS != 0 || cp.Transactions != 0 {
		t.Errorf("older checkpoint read as %+v", cp)
	}
}

// TestPublishedOffsets: the cut a commit writes is the previous committed
// cut with the acknowledged records of its own transaction on top, never
// a record of an aborted transaction, and never a checkpoint or schema
// history record.
func TestPublishedOffsets(t *testing.T) {
	rec := func(topic string, part int32, off int64) *kgo.Record {
		return &kgo.Record{Topic: topic, Partition: part, Offset: off}
	}
	type step struct {
		acked  []*kgo.Record
		commit bool // the transaction's checkpoint committed; false: it aborted
	}
	cases := []struct {
		name  string
		start event.Offsets
		steps []step
		want  event.Offsets // next() after the steps
	}{
		{"the offset after the highest acknowledged record, whatever order the callbacks come in",
			event.Offsets{"a": {0: 3}},
			[]step{{acked: []*kgo.Record{rec("a", 0, 7), rec("a", 0, 5), rec("a", 1, 0)}, commit: true}},
			event.Offsets{"a": {0: 8, 1: 1}}},
		{"cumulative: a partition the last transaction did not touch keeps its end",
			event.Offsets{"a": {0: 3, 1: 9}, "b": {0: 4}},
			[]step{{acked: []*kgo.Record{rec("a", 0, 3)}, commit: true}, {acked: []*kgo.Record{rec("b", 0, 6)}, commit: true}},
			event.Offsets{"a": {0: 4, 1: 9}, "b": {0: 7}}},
		{"an aborted transaction's records are forgotten",
			event.Offsets{"a": {0: 3}},
			[]step{{acked: []*kgo.Record{rec("a", 0, 10)}, commit: false}},
			event.Offsets{"a": {0: 3}}},
		{"the checkpoint and schema history topics are not table topics",
			event.Offsets{"a": {0: 3}},
			[]step{{acked: []*kgo.Record{rec("p._readside_checkpoints", 0, 40), rec("p._readside_schema_history", 0, 2), rec("a", 0, 3)}, commit: true}},
			event.Offsets{"a": {0: 4}}},
		{"a table topic the resumed checkpoint did not name appears with its first record",
			nil,
			[]step{{acked: []*kgo.Record{rec("b", 2, 0)}, commit: true}},
			event.Offsets{"b": {2: 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var o publishedOffsets
			o.reset(c.start, []string{"a", "b"})
			for _, s := range c.steps {
				for _, r := range s.acked {
					o.acked(r)
				}
				if s.commit {
					o.committed(o.next())
				} else {
					o.dropPending()
				}
			}
			if got := o.next(); !reflect.DeepEqual(got, c.want) {
				t.Errorf("cut %v, want %v", got, c.want)
			}
		})
	}
}

// TestPublishedCutIsACopy: a cut written into a checkpoint does not move
// when later records are acknowledged (the checkpoint is encoded after
// next returns, in the background commit).
func TestPublishedCutIsACopy(t *testing.T) {
	var o publishedOffsets
	o.reset(event.Offsets{"a": {0: 1}}, []string{"a"})
	cut := o.next()
	o.committed(cut)
	o.acked(&kgo.Record{Topic: "a", Partition: 0, Offset: 5})
	if b, _ := json.Marshal(cut); string(b) != `{"a":{"0":1}}` {
		t.Errorf("committed cut changed to %s", b)
	}
}
