package projector

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/config"
	"github.com/readside/readside/debezium"
	"github.com/readside/readside/projections"
)

// TestSnapshotAgainWarns: a Debezium connector marks the first row of a
// snapshot run source.snapshot "first"; past offset 0 of its topic the
// connector snapshotted again, and rows deleted in between stay in the
// read table, so the poll that maps it (Build, then prepare) warns with
// where it happened. At offset 0 it is the connector's first snapshot,
// and other snapshot rows or streamed changes are no sign of one.
func TestSnapshotAgainWarns(t *testing.T) {
	cfg := config.Default()
	cfg.Kafka.Format = config.FormatDebezium
	cfg.Source.Tables = []string{"d.t"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{"p": {From: "d.t", Sink: "reads", Key: []string{"id"},
		Columns: map[string]string{"id": "id", "c": "c"}}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	tbl, err := debezium.NewTable(cfg.Kafka.TopicPrefix, "mariadb", "d", "t",
		[]debezium.Column{{Name: "id", Type: "int"}, {Name: "c", Type: "int", Optional: true}}, []int{0}, cfg.Kafka.Debezium)
	if err != nil {
		t.Fatal(err)
	}
	// marker "": a streamed change; else the snapshot row's source.snapshot.
	value := func(marker string) []byte {
		src := debezium.Source{TsSec: 1700000000, ServerID: 1, GTID: "0-1-5", File: "mariadb-bin.000003", Pos: 4242}
		op := byte('c')
		if marker != "" {
			src, op = debezium.Source{Snapshot: true, TsSec: 1700000000, File: "mariadb-bin.000003", Pos: 4}, 'r'
		}
		v, err := tbl.Value(nil, op, nil, debezium.Row{[]byte("7"), []byte("1")}, src, time.Unix(1700000000, 0))
		if err != nil {
			t.Fatal(err)
		}
		if marker != "" {
			v = bytes.Replace(v, []byte(`"snapshot":"true"`), []byte(`"snapshot":`+marker), 1)
		}
		return v
	}
	cases := []struct {
		why    string
		marker string
		offset int64
		want   string // "" : no warning
	}{
		{"the first row of a snapshot past the topic's start: the connector snapshotted again", `"first"`, 5, p.Topic + " partition 2 offset 5"},
		{"the first row of the first snapshot, at offset 0, is no re-snapshot", `"first"`, 0, ""},
		{"a later row of a snapshot run is not where it started", `"true"`, 5, ""},
		{"the last row of a snapshot run neither", `"last"`, 5, ""},
		{"a streamed change is no snapshot", "", 5, ""},
	}
	for _, c := range cases {
		var log bytes.Buffer
		pr := &Projector{p: p, log: slog.New(slog.NewTextHandler(&log, nil))}
		j, err := pr.prepare(t.Context(), []*kgo.Record{{Topic: p.Topic, Partition: 2, Offset: c.offset, Value: value(c.marker)}}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(j.bad) > 0 {
			t.Fatalf("%s: the record was rejected: %v", c.why, j.bad[0].Reason)
		}
		warned := strings.Contains(log.String(), "snapshotted this table again")
		switch {
		case c.want == "" && warned:
			t.Errorf("%s: warned:\n%s", c.why, log.String())
		case c.want != "" && !warned:
			t.Errorf("%s: no warning, want one at %s", c.why, c.want)
		case c.want != "" && !strings.Contains(log.String(), `at="`+c.want+`"`):
			t.Errorf("%s: the warning does not name %s:\n%s", c.why, c.want, log.String())
		}
	}
}
