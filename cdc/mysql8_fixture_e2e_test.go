package cdc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/klauspost/compress/zstd"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/compression"
	"github.com/readside/readside/internal/rowdecode"
)

// MySQL 8 only events, built byte by byte after the binlog format (no
// MySQL 8 server here): a compressed transaction (TRANSACTION_PAYLOAD_EVENT
// whose inner events carry LogPos 0) and a PARTIAL_UPDATE_ROWS_EVENT. They
// are parsed by go-mysql exactly as off the wire and fed to the tailer.

// binlogFixture writes MySQL 8 binlog events (checksums off) and tracks
// their end offsets like a binlog file.
type binlogFixture struct {
	pos uint32
}

const fixtureServerID = 8

// event frames a body with the common header; logPos 0 leaves it unset,
// as MySQL does for events inside a transaction payload.
func (f *binlogFixture) event(typ replication.EventType, body []byte, inner bool) []byte {
	size := uint32(19 + len(body))
	h := make([]byte, 19, size)
	binary.LittleEndian.PutUint32(h[0:], uint32(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Unix()))
	h[4] = byte(typ)
	binary.LittleEndian.PutUint32(h[5:], fixtureServerID)
	binary.LittleEndian.PutUint32(h[9:], size)
	if !inner {
		f.pos += size
		binary.LittleEndian.PutUint32(h[13:], f.pos)
	}
	return append(h, body...)
}

// formatDescription is a MySQL 8.0.36 FORMAT_DESCRIPTION_EVENT with the
// post-header lengths of that version and checksums off.
func (f *binlogFixture) formatDescription() []byte {
	f.pos = 4 // after the magic number
	b := binary.LittleEndian.AppendUint16(nil, 4)
	ver := make([]byte, 50)
	copy(ver, "8.0.36")
	b = append(b, ver...)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = append(b, 19)
	// Post-header length per event type 1..41 (MySQL 8.0).
	b = append(b, 0x38, 0xd, 0x0, 0x8, 0x0, 0x12, 0x0, 0x4, 0x4, 0x4, 0x4, 0x12, 0x0, 0x0, 0x5c, 0x0, 0x4, 0x1a, 0x8, 0x0, 0x0, 0x0,
		0x8, 0x8, 0x8, 0x2, 0x0, 0x0, 0x0, 0xa, 0xa, 0xa, 0x19, 0x19, 0x0, 0x12, 0x34, 0x0, 0xa, 0x28, 0x0)
	b = append(b, byte(replication.BINLOG_CHECKSUM_ALG_OFF), 0, 0, 0, 0)
	return f.event(replication.FORMAT_DESCRIPTION_EVENT, b, false)
}

var fixtureSID = []byte{0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62}

func (f *binlogFixture) gtid(gno int64) []byte {
	b := []byte{1}
	b = append(b, fixtureSID...)
	b = binary.LittleEndian.AppendUint64(b, uint64(gno))
	b = append(b, 2) // logical timestamps
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = binary.LittleEndian.AppendUint64(b, 1)
	return f.event(replication.GTID_EVENT, b, false)
}

func (f *binlogFixture) query(sql string, inner bool) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 7) // thread id
	b = binary.LittleEndian.AppendUint32(b, 0)    // exec time
	b = append(b, 0)                              // db length
	b = binary.LittleEndian.AppendUint16(b, 0)    // error code
	b = binary.LittleEndian.AppendUint16(b, 0)    // status vars length
	b = append(b, 0)                              // db "" + NUL
	b = append(b, sql...)
	return f.event(replication.QUERY_EVENT, b, inner)
}

// tableMap describes shop.docs (id INT PRIMARY KEY, j JSON) with FULL
// row metadata.
func (f *binlogFixture) tableMap(inner bool) []byte {
	b := make([]byte, 6)
	binary.LittleEndian.PutUint32(b, 42) // table id
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = append(b, 4)
	b = append(b, "shop\x00"...)
	b = append(b, 4)
	b = append(b, "docs\x00"...)
	b = append(b, 2, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_JSON)
	b = append(b, 1, 4)                      // metadata: JSON length bytes
	b = append(b, 0x02)                      // j nullable
	b = append(b, 1, 1, 0x00)                // SIGNEDNESS: id signed
	b = append(b, 4, 5, 2, 'i', 'd', 1, 'j') // COLUMN_NAME
	b = append(b, 8, 1, 0)                   // SIMPLE_PRIMARY_KEY: column 0
	return f.event(replication.TABLE_MAP_EVENT, b, inner)
}

// jsonString is a MySQL binary JSON string value.
func jsonString(s string) []byte { return append([]byte{0x0c, byte(len(s))}, s...) }

func rowImage(id int32, doc []byte) []byte {
	b := []byte{0} // null bitmap
	b = binary.LittleEndian.AppendUint32(b, uint32(id))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(doc)))
	return append(b, doc...)
}

func (f *binlogFixture) rows(typ replication.EventType, images [][]byte, valueOptions []byte, inner bool) []byte {
	return f.rowsPresent(typ, 0x03, 0x03, images, valueOptions, inner) // both columns in every image
}

// rowsPresent writes a rows event whose images hold the columns set in
// present (the before image's, or the only one's) and presentAfter (an
// update's after image's): binlog_row_image=FULL sets every bit, MINIMAL
// and NOBLOB leave some out, and the images then hold only those columns.
func (f *binlogFixture) rowsPresent(typ replication.EventType, present, presentAfter byte, images [][]byte, valueOptions []byte, inner bool) []byte {
	b := make([]byte, 6)
	binary.LittleEndian.PutUint32(b, 42)
	b = binary.LittleEndian.AppendUint16(b, 1) // STMT_END
	b = binary.LittleEndian.AppendUint16(b, 2) // no extra data
	b = append(b, 2, present)                  // 2 columns
	update := typ == replication.UPDATE_ROWS_EVENTv2 || typ == replication.PARTIAL_UPDATE_ROWS_EVENT
	if update {
		b = append(b, presentAfter)
	}
	for i, img := range images {
		if typ == replication.PARTIAL_UPDATE_ROWS_EVENT && i%2 == 1 {
			b = append(b, valueOptions...)
		}
		b = append(b, img...)
	}
	return f.event(typ, b, inner)
}

func (f *binlogFixture) xid(inner bool) []byte {
	return f.event(replication.XID_EVENT, binary.LittleEndian.AppendUint64(nil, 99), inner)
}

// payload compresses inner events into a TRANSACTION_PAYLOAD_EVENT.
func (f *binlogFixture) payload(t *testing.T, inner ...[]byte) []byte {
	raw := bytes.Join(inner, nil)
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	compressed := enc.EncodeAll(raw, nil)
	enc.Close()
	// Each field: type, length, little-endian value in as few bytes as
	// it needs.
	field := func(b []byte, typ byte, v uint64) []byte {
		val := binary.LittleEndian.AppendUint64(nil, v)
		n := max(1, (64-leadingZeros(v)+7)/8)
		return append(append(b, typ, byte(n)), val[:n]...)
	}
	b := field(nil, replication.OTW_PAYLOAD_COMPRESSION_TYPE_FIELD, replication.ZSTD)
	b = field(b, replication.OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD, uint64(len(raw)))
	b = field(b, replication.OTW_PAYLOAD_SIZE_FIELD, uint64(len(compressed)))
	b = append(b, replication.OTW_PAYLOAD_HEADER_END_MARK)
	b = append(b, compressed...)
	return f.event(replication.TRANSACTION_PAYLOAD_EVENT, b, false)
}

func leadingZeros(v uint64) int {
	n := 0
	for i := 63; i >= 0 && v&(1<<i) == 0; i-- {
		n++
	}
	return n
}

// fixtureStream is a stream of a tailer on a MySQL 8 source that does
// not exist: events are handed to it directly; Kafka is the test bed's.
func fixtureStream(t *testing.T, bed *testbed.Bed) (*stream, *consumer) {
	t.Helper()
	ctx := t.Context()
	cfg := tailerConfig(t, bed, "shop.docs")
	tl, err := New(sectionsOf(cfg), cfg.Kafka.Brokers, testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := newPublisher(cfg.Kafka.Brokers, cfg.TransactionalID(), event.CheckpointTopic(cfg.Kafka.TopicPrefix), cfg.Kafka.MaxMessageBytes, compression.Option(cfg.Kafka.Compression), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	topic := event.TopicFor(cfg.Kafka.TopicPrefix, "shop", "docs")
	partitions, err := pub.ensureTopics(ctx, []string{topic}, cfg.Kafka.Partitions, cfg.Kafka.ReplicationFactor, cfg.Kafka.MaxMessageBytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := pub.loadCheckpoint(ctx); err != nil {
		t.Fatal(err)
	}
	start := Position{Flavor: "mysql", GTID: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-4", File: "binlog.000007", Pos: 4}
	gtids, err := start.gtidSet()
	if err != nil {
		t.Fatal(err)
	}
	s := &stream{t: tl, pub: pub, src: &sourceDB{flavor: "mysql", serverID: fixtureServerID}, cp: Checkpoint{Position: start},
		clock: NewClock(0), captured: map[string]string{"shop.docs": topic}, partitions: partitions,
		charsets: map[uint64]string{255: "utf8mb4"}, tables: map[uint64]*table{}, gtids: gtids, file: start.File, sched: newCommitScheduler(cfg.Kafka)}
	s.sched.pos = start
	return s, newConsumer(t, bed, topic)
}

// parseFixture parses events with go-mysql's parser, configured as the
// tailer's syncer configures it.
func parseFixture(t *testing.T, events ...[]byte) []*replication.BinlogEvent {
	t.Helper()
	var sc replication.BinlogSyncerConfig
	rowdecode.Options(&sc)
	p := replication.NewBinlogParser()
	p.SetUseDecimal(sc.UseDecimal)
	p.SetParseTime(sc.ParseTime)
	p.SetTimestampStringLocation(sc.TimestampStringLocation)
	p.SetRowsEventDecodeFunc(sc.RowsEventDecodeFunc)
	var out []*replication.BinlogEvent
	for _, data := range events {
		ev, err := p.Parse(data)
		if err != nil {
			t.Fatalf("parsing fixture event: %v", err)
		}
		out = append(out, ev)
	}
	return out
}

// TestMySQL8CompressedTransaction: a binlog_transaction_compression
// transaction (insert, update, delete inside one TRANSACTION_PAYLOAD_EVENT,
// inner events at LogPos 0) publishes every change, and the checkpoint
// after it is at the payload's end offset with its GTID, never at 0.
func TestMySQL8CompressedTransaction(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	var f binlogFixture
	fde := f.formatDescription()
	gtid := f.gtid(5)
	payload := f.payload(t,
		f.query("BEGIN", true),
		f.tableMap(true),
		f.rows(replication.WRITE_ROWS_EVENTv2, [][]byte{rowImage(1, jsonString("a"))}, nil, true),
		f.tableMap(true),
		f.rows(replication.UPDATE_ROWS_EVENTv2, [][]byte{rowImage(1, jsonString("a")), rowImage(1, jsonString("b"))}, nil, true),
		f.tableMap(true),
		f.rows(replication.DELETE_ROWS_EVENTv2, [][]byte{rowImage(1, jsonString("b"))}, nil, true),
		f.xid(true),
	)
	end := f.pos
	evs := parseFixture(t, fde, gtid, payload)
	if tp, ok := evs[2].Event.(*replication.TransactionPayloadEvent); !ok || len(tp.Events) != 8 {
		t.Fatalf("fixture did not parse as a transaction payload of 8 events: %T", evs[2].Event)
	}
	s, cons := fixtureStream(t, bed)
	for _, ev := range evs {
		if err := s.handle(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.commit(ctx); err != nil {
		t.Fatal(err)
	}
	events := cons.next(3, 30*time.Second)
	var got []string
	for _, e := range events {
		img := e.After
		if e.Op == "d" {
			img = e.Before
		}
		got = append(got, fmt.Sprintf("%s%v", e.Op, img))
		if e.Source["pos"] == nil || fmt.Sprint(e.Source["pos"]) == "0" {
			t.Errorf("event %s carries source position %v", e.Op, e.Source["pos"])
		}
	}
	if want := `[cmap[id:1 j:"a"] umap[id:1 j:"b"] dmap[id:1 j:"b"]]`; fmt.Sprint(got) != want {
		t.Errorf("events %v, want %s", got, want)
	}
	cp := lastCheckpoint(t, bed, config.Config{Source: s.t.cfg.Source, Kafka: s.t.cfg.Kafka})
	if cp.Position.Pos != end || cp.Position.File != "binlog.000007" || !strings.HasSuffix(cp.Position.GTID, ":1-5") {
		t.Errorf("checkpoint %s, want binlog.000007:%d with GTID ...:1-5", cp.Position, end)
	}
}

// TestMySQL8PartialJSONRefused: a PARTIAL_UPDATE_ROWS_EVENT (a session with
// binlog_row_value_options=PARTIAL_JSON) on a captured table stops the
// tailer with the cause and the fix, publishing nothing of it; outside a
// payload and inside one.
func TestMySQL8PartialJSONRefused(t *testing.T) {
	bed := testbed.Get(t)
	for _, compressed := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "compressed"}[compressed] // a topic name: no '='
		t.Run(name, func(t *testing.T) {
			var f binlogFixture
			events := [][]byte{f.formatDescription(), f.gtid(5)}
			// value options: PARTIAL_JSON_UPDATES, j not partial (bit 0 clear).
			inner := [][]byte{f.query("BEGIN", compressed), f.tableMap(compressed),
				f.rows(replication.PARTIAL_UPDATE_ROWS_EVENT, [][]byte{rowImage(1, jsonString("a")), rowImage(1, jsonString("b"))}, []byte{1, 0}, compressed),
				f.xid(compressed)}
			if compressed {
				events = append(events, f.payload(t, inner...))
			} else {
				events = append(events, inner...)
			}
			s, _ := fixtureStream(t, bed)
			var err error
			for _, ev := range parseFixture(t, events...) {
				if err = s.handle(t.Context(), ev); err != nil {
					break
				}
			}
			var fatal *FatalError
			if !errors.As(err, &fatal) || !strings.Contains(err.Error(), "PARTIAL_JSON") || !strings.Contains(err.Error(), "shop.docs") {
				t.Fatalf("partial JSON update: %v; want a fatal error naming the table, the setting and the fix", err)
			}
			if s.pub.records != 0 {
				t.Errorf("%d records produced for a partial update", s.pub.records)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// TestMySQL8CompressedTransactionFilePos: on a source without GTIDs the
// file offset is the whole position, so the checkpoint after a compressed
// transaction must be the payload's end offset: offset 0 (the inner
// events' own LogPos) would replay the file from its start, and a
// transaction end at 0 stops the tailer (go-mysql #1153 class).
func TestMySQL8CompressedTransactionFilePos(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	var f binlogFixture
	fde := f.formatDescription()
	payload := f.payload(t, f.query("BEGIN", true), f.tableMap(true),
		f.rows(replication.WRITE_ROWS_EVENTv2, [][]byte{rowImage(7, jsonString("x"))}, nil, true), f.xid(true))
	end := f.pos
	s, cons := fixtureStream(t, bed)
	s.gtids = nil
	s.cp.Position.GTID, s.sched.pos.GTID = "", ""
	for _, ev := range parseFixture(t, fde, payload) {
		if err := s.handle(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.commit(ctx); err != nil {
		t.Fatal(err)
	}
	if e := cons.next(1, 30*time.Second); fmt.Sprint(e[0].After) != `map[id:7 j:"x"]` {
		t.Errorf("event %v", e[0].After)
	}
	cp := lastCheckpoint(t, bed, config.Config{Source: s.t.cfg.Source, Kafka: s.t.cfg.Kafka})
	if cp.Position.Pos != end || cp.Position.File != "binlog.000007" || cp.Position.GTID != "" {
		t.Errorf("checkpoint %s, want binlog.000007:%d without GTID", cp.Position, end)
	}
}
