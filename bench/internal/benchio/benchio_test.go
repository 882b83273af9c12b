package benchio

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The record file keeps what rawupsert -joins needs to batch records as
// the projector does: topic, key, value, partition and offset.
func TestRecordFileRoundTrip(t *testing.T) {
	in := []*kgo.Record{
		{Topic: "p.orders", Key: []byte(`{"id":1}`), Value: []byte(`{"op":"c"}`), Partition: 5, Offset: 1 << 40},
		{Topic: "p.customers", Key: nil, Value: []byte("v"), Partition: 0, Offset: 0},
		{Topic: "p.orders", Key: []byte("k"), Value: nil, Partition: 2, Offset: 7},
	}
	path := filepath.Join(t.TempDir(), "x.records")
	if err := WriteRecords(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("read %d records, wrote %d", len(out), len(in))
	}
	for i, r := range out {
		w := in[i]
		if r.Topic != w.Topic || !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) || r.Partition != w.Partition || r.Offset != w.Offset {
			t.Errorf("record %d: read %s/%d@%d %q=%q, wrote %s/%d@%d %q=%q", i, r.Topic, r.Partition, r.Offset, r.Key, r.Value, w.Topic, w.Partition, w.Offset, w.Key, w.Value)
		}
	}
}

// A file of another format is refused with how to get a new one.
func TestRecordFileOldFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.records")
	if err := os.WriteFile(path, []byte("readside-bench-records v1\n\x01t\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRecords(path); err == nil || !bytes.Contains([]byte(err.Error()), []byte("run benchall again")) {
		t.Fatalf("ReadRecords of a v1 file: %v, want an error saying to run benchall again", err)
	}
}
