package cdc

import (
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/readside/readside/config"
)

// imageStream is a stream of a tailer on a MySQL 8 source that does not
// exist, with no publisher: enough to hand it events that must be
// refused before anything is produced (a produce would panic).
func imageStream(t *testing.T) *stream {
	t.Helper()
	cfg := config.Default()
	tl := &Tailer{cfg: sectionsOf(cfg), now: time.Now, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return &stream{t: tl, src: &sourceDB{flavor: "mysql", serverID: fixtureServerID},
		captured: map[string]string{"shop.docs": "rs.shop.docs"}, charsets: map[uint64]string{255: "utf8mb4"},
		tables: map[uint64]*table{}, file: "binlog.000007"}
}

// idImage and docImage are row images holding only id, or only j.
func idImage(id int32) []byte { return binary.LittleEndian.AppendUint32([]byte{0}, uint32(id)) }
func docImage(doc []byte) []byte {
	return append(binary.LittleEndian.AppendUint32([]byte{0}, uint32(len(doc))), doc...)
}

// jsonReplace is a MySQL binary JSON diff (Json_diff_vector::write_binary):
// one REPLACE of path with a binary JSON value.
func jsonReplace(path string, value []byte) []byte {
	b := []byte{0, byte(len(path))} // operation REPLACE, path length
	b = append(b, path...)
	b = append(b, byte(len(value)))
	return append(b, value...)
}

// TestMySQL8RowImagesRefused: rows events of the documented MySQL 8
// formats whose images are not the whole row (binlog_row_image=MINIMAL or
// NOBLOB: a columns-present bitmap that is not all ones; or
// binlog_row_value_options=PARTIAL_JSON: a PARTIAL_UPDATE_ROWS_EVENT with
// a JSON diff) parse with go-mysql as off the wire and are then refused
// by the tailer with a fatal error naming the table, the setting and the
// fix, before anything is published; plain and inside a compressed
// transaction (TRANSACTION_PAYLOAD_EVENT). The full images of the same
// table are published exactly (TestMySQL8CompressedTransaction, e2e).
func TestMySQL8RowImagesRefused(t *testing.T) {
	var f binlogFixture
	for _, c := range []struct {
		why     string
		rows    func(inner bool) []byte
		setting string
	}{
		{"MINIMAL update: the before image holds the key only, the after image the changed column only", func(inner bool) []byte {
			return f.rowsPresent(replication.UPDATE_ROWS_EVENTv2, 0x01, 0x02, [][]byte{idImage(1), docImage(jsonString("b"))}, nil, inner)
		}, "binlog_row_image=MINIMAL or NOBLOB"},
		{"MINIMAL insert: only the columns the statement named (j left to its default)", func(inner bool) []byte {
			return f.rowsPresent(replication.WRITE_ROWS_EVENTv2, 0x01, 0, [][]byte{idImage(1)}, nil, inner)
		}, "binlog_row_image=MINIMAL or NOBLOB"},
		{"MINIMAL delete: the before image holds the key only", func(inner bool) []byte {
			return f.rowsPresent(replication.DELETE_ROWS_EVENTv2, 0x01, 0, [][]byte{idImage(1)}, nil, inner)
		}, "binlog_row_image=MINIMAL or NOBLOB"},
		{"NOBLOB update of id: the unchanged JSON (a blob) is left out of both images", func(inner bool) []byte {
			return f.rowsPresent(replication.UPDATE_ROWS_EVENTv2, 0x01, 0x01, [][]byte{idImage(1), idImage(2)}, nil, inner)
		}, "binlog_row_image=MINIMAL or NOBLOB"},
		{"NOBLOB update that changes the JSON: the after image is whole, the before image lacks the old JSON", func(inner bool) []byte {
			return f.rowsPresent(replication.UPDATE_ROWS_EVENTv2, 0x01, 0x03, [][]byte{idImage(1), rowImage(1, jsonString("b"))}, nil, inner)
		}, "binlog_row_image=MINIMAL or NOBLOB"},
		{"PARTIAL_JSON: the after image holds a diff of j ($.a replaced), not j", func(inner bool) []byte {
			// value options PARTIAL_JSON_UPDATES, then the partial bitmap: j is a diff.
			return f.rows(replication.PARTIAL_UPDATE_ROWS_EVENT, [][]byte{rowImage(1, jsonString("a")), rowImage(1, jsonReplace("$.a", jsonString("b")))}, []byte{1, 1}, inner)
		}, "binlog_row_value_options=PARTIAL_JSON"},
	} {
		for _, compressed := range []bool{false, true} {
			events := [][]byte{f.formatDescription(), f.gtid(5)}
			inner := [][]byte{f.query("BEGIN", compressed), f.tableMap(compressed), c.rows(compressed), f.xid(compressed)}
			if compressed {
				events = append(events, f.payload(t, inner...))
			} else {
				events = append(events, inner...)
			}
			parsed := parseFixture(t, events...)
			if compressed {
				if tp, ok := parsed[2].Event.(*replication.TransactionPayloadEvent); !ok || len(tp.Events) != 4 {
					t.Fatalf("%s: the payload did not parse into 4 events: %T", c.why, parsed[2].Event)
				}
			}
			if c.setting == "binlog_row_value_options=PARTIAL_JSON" && !compressed {
				// go-mysql decoded the diff (the fixture is the format it reads).
				re := parsed[4].Event.(*replication.RowsEvent)
				if d, ok := re.Rows[1][1].(*replication.JsonDiff); !ok || d.Path != "$.a" || d.Value != `"b"` {
					t.Errorf("%s: after image j %#v, want the JSON diff REPLACE $.a \"b\"", c.why, re.Rows[1][1])
				}
			}
			s := imageStream(t)
			var err error
			for _, ev := range parsed {
				if err = s.handle(t.Context(), ev); err != nil {
					break
				}
			}
			var fatal *FatalError
			if !errors.As(err, &fatal) {
				t.Errorf("%s (compressed %v): %v, want a fatal error", c.why, compressed, err)
				continue
			}
			for _, want := range []string{"shop.docs", c.setting, "Fix: SET GLOBAL binlog_row_", "start over from a fresh snapshot", "binlog.000007:"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s (compressed %v): %q lacks %q", c.why, compressed, err, want)
				}
			}
		}
	}
}
