package projections

import "testing"

// A narrow update as the tailer publishes it (bench workload
// narrow_update_zipf).
var benchEvent = []byte(`{"op":"u","version":1869683302580224001,"db":"src_1_1","table":"narrow_update_zipf","key":{"id":17},"before":{"id":17,"k":17,"a":482211,"b":"name-17-2kq9x8v1r0s3","c":"81234.55","d":"2026-01-09 11:52:16.123456","commit_us":1780000000123456},"after":{"id":17,"k":17,"a":90311,"b":"name-17-1zz0k3m7a9q2","c":"4411.20","d":"2026-01-02 03:04:05.654321","commit_us":1780000001234567},"source":{"flavor":"mariadb","server_id":1,"file":"binlog.000001","pos":123456,"gtid":"0-1-4242","ts_sec":1780000001},"txn":{"id":"0-1-4242","seq":12},"schema":{"version":"9f0c1d2e3a4b5c6d","columns":{"id":"bigint","k":"int","a":"int","b":"varchar(60)","c":"decimal(12,2)","d":"datetime(6)","commit_us":"bigint"}}}`)

func BenchmarkDecodeEvent(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeEvent(benchEvent); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecodeEventSchema: the schema member is decoded (and shared through
// the cache) exactly like the rest of the event; null and absent give nil.
func TestDecodeEventSchema(t *testing.T) {
	for range 2 { // the second decode comes from the cache
		e, err := DecodeEvent(benchEvent)
		if err != nil {
			t.Fatal(err)
		}
		if e.Schema == nil || e.Schema.Columns["c"] != "decimal(12,2)" || len(e.Schema.Columns) != 7 || e.Version != 1869683302580224001 || string(e.After["a"]) != "90311" {
			t.Fatalf("decoded %+v (schema %+v)", e, e.Schema)
		}
	}
	for _, v := range []string{`{"op":"t","version":5,"schema":null}`, `{"op":"t","version":5}`} {
		if e, err := DecodeEvent([]byte(v)); err != nil || e.Schema != nil {
			t.Errorf("%s: schema %+v, %v", v, e.Schema, err)
		}
	}
	if _, err := DecodeEvent([]byte(`{"op":"c","version":5,"schema":{"columns":7}}`)); err == nil {
		t.Error("a malformed schema member was accepted")
	}
}
