package projections

import (
	"strconv"
	"testing"

	"github.com/readside/readside/config"
)

// BenchmarkBuild is a projector's CPU per event outside the sink: one
// 5,000-record poll of narrow inserts (the bench workload narrow_insert's
// shape: 200-row source transactions, whose rows share their rows event's
// binlog position ~100 at a time — binlog_row_event_max_size is 8 KiB)
// decoded, mapped to writes and coalesced. Reported per event.
func BenchmarkBuild(b *testing.B) {
	cfg := baseConfig()
	cfg.Source.Tables = []string{"src.narrow_insert"}
	cfg.Projections = map[string]config.Projection{"p_narrow_insert": {
		From: "src.narrow_insert", Sink: "reads", Key: []string{"id"},
		Columns: map[string]string{"id": "id", "k": "k", "a": "a", "b": "b", "c": "c", "d": "d", "commit_us": "commit_us"},
	}}
	ps, err := Compile(cfg)
	if err != nil {
		b.Fatal(err)
	}
	p := ps[0]
	benchBuild(b, p)
}

// benchBuild builds BenchmarkBuild's poll (narrowInserts) with p, and
// reports the time per event.
func benchBuild(b *testing.B, p *Projection) {
	const n = 5000
	records := narrowInserts(p.Topic, n)
	b.ReportAllocs()
	for b.Loop() {
		batch, bad := p.Build(records)
		if len(bad) > 0 || len(batch.Writes) != n {
			b.Fatalf("%d writes, %d rejected: %v", len(batch.Writes), len(bad), bad)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
}

// narrowInserts are n records of BenchmarkBuild's narrow inserts on topic.
func narrowInserts(topic string, n int) []Record {
	const rowsPerEvent = 100
	records := make([]Record, n)
	for i := range records {
		id := strconv.Itoa(i + 1)
		gtid := "0-1-" + strconv.Itoa(4242+i/200)
		v := `{"op":"c","version":` + strconv.Itoa(1869683302580224001+i) + `,"db":"src","table":"narrow_insert","key":{"id":` + id + `},"before":null,` +
			`"after":{"id":` + id + `,"k":` + id + `,"a":482211,"b":"name-` + id + `-2kq9x8v1r0s3","c":"81234.55","d":"2026-01-09 11:52:16.123456","commit_us":1780000000123456},` +
			`"source":{"flavor":"mariadb","server_id":1,"file":"binlog.000001","pos":` + strconv.Itoa(123456+i/rowsPerEvent*8300) + `,"gtid":"` + gtid + `","ts_sec":1780000001},` +
			`"txn":{"id":"` + gtid + `","seq":` + strconv.Itoa(i%200) + `},` +
			`"schema":{"version":"9f0c1d2e3a4b5c6d","columns":{"id":"bigint","k":"int","a":"int","b":"varchar(60)","c":"decimal(12,2)","d":"datetime(6)","commit_us":"bigint"}}}`
		records[i] = Record{Topic: topic, Partition: int32(i % 6), Offset: int64(i / 6), Key: []byte(`{"id":` + id + `}`), Value: []byte(v)}
	}
	return records
}
