package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/shopspring/decimal"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/e2e/testbed"
)

// rowChange is what the smoke test carries from the binlog through Kafka.
type rowChange struct {
	Op   string            `json:"op"` // c, u, d
	ID   string            `json:"id"`
	Cols map[string]string `json:"cols"` // after image (before image for d)
}

// TestSmoke proves the test bed end to end: row events written to MariaDB
// are read back from its binlog with column names from the table map,
// travel through a topic on the broker in per-key order, and survive a
// kill -9 of both the broker and the database.
func TestSmoke(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	db := bed.MySQL

	dbName, err := db.CreateDatabase(ctx, "smoke")
	if err != nil {
		t.Fatal(err)
	}
	table := "`" + dbName + "`.items"
	if err := db.Exec(ctx, "CREATE TABLE "+table+` (
		id INT PRIMARY KEY,
		label VARCHAR(64) CHARACTER SET utf8mb4,
		qty INT UNSIGNED NOT NULL,
		price DECIMAL(20,4))`); err != nil {
		t.Fatal(err)
	}
	start, err := db.CurrentPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// The writes, and the changes they must produce, in commit order.
	var want []rowChange
	state := map[int]map[string]string{}
	for id := 1; id <= 20; id++ {
		label := fmt.Sprintf("item %d ✓", id)
		if _, err := db.DB().ExecContext(ctx, "INSERT INTO "+table+" VALUES (?, ?, ?, ?)", id, label, 4294967295-id, fmt.Sprintf("%d.0100", id)); err != nil {
			t.Fatal(err)
		}
		state[id] = map[string]string{"id": strconv.Itoa(id), "label": label, "qty": strconv.Itoa(4294967295 - id), "price": fmt.Sprintf("%d.0100", id)}
		want = append(want, rowChange{Op: "c", ID: strconv.Itoa(id), Cols: clone(state[id])})
	}
	for round := 1; round <= 2; round++ {
		for id := 1; id <= 10; id++ {
			label := fmt.Sprintf("item %d round %d", id, round)
			if _, err := db.DB().ExecContext(ctx, "UPDATE "+table+" SET label = ? WHERE id = ?", label, id); err != nil {
				t.Fatal(err)
			}
			state[id]["label"] = label
			want = append(want, rowChange{Op: "u", ID: strconv.Itoa(id), Cols: clone(state[id])})
		}
	}
	for id := 1; id <= 5; id++ {
		if _, err := db.DB().ExecContext(ctx, "DELETE FROM "+table+" WHERE id = ?", id); err != nil {
			t.Fatal(err)
		}
		want = append(want, rowChange{Op: "d", ID: strconv.Itoa(id), Cols: clone(state[id])})
		delete(state, id)
	}

	got := readBinlog(t, db, start, dbName, "items", len(want))
	assertChanges(t, "binlog", got, want)

	// Through Kafka: key = primary key, so a row's changes share a partition.
	topic := "smoke." + dbName + ".items"
	cl := newClient(t, bed)
	adm := kadm.NewClient(cl)
	created, err := adm.CreateTopic(ctx, 3, -1, nil, topic)
	if err != nil || created.Err != nil {
		t.Fatalf("creating %s: %v %v", topic, err, created.Err)
	}
	for _, c := range got {
		value, _ := json.Marshal(c)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(c.ID), Value: value}).FirstErr(); err != nil {
			t.Fatalf("producing: %v", err)
		}
	}
	consumed := consumeAll(t, bed, topic, len(want))
	assertPerKeyOrder(t, "topic", consumed, want)

	// kill -9 the broker and the database; both must come back with every
	// acknowledged record and every committed row.
	if bed.Kafka.Nodes() == 0 || !db.Private() {
		t.Log("external servers: skipping kill -9 and restart")
		return
	}
	if err := bed.Kafka.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := bed.Kafka.Restart(ctx, 0); err != nil {
		t.Fatalf("restarting broker after kill -9: %v", err)
	}
	assertPerKeyOrder(t, "topic after broker kill -9", consumeAll(t, bed, topic, len(want)), want)

	if err := db.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := db.Restart(ctx); err != nil {
		t.Fatalf("restarting MariaDB after kill -9: %v", err)
	}
	rows, err := db.DB().QueryContext(ctx, "SELECT id, label, qty, price FROM "+table+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, label, qty, price string
		if err := rows.Scan(&id, &label, &qty, &price); err != nil {
			t.Fatal(err)
		}
		idn, _ := strconv.Atoi(id)
		w := state[idn]
		if w == nil || w["label"] != label || w["qty"] != qty || w["price"] != price {
			t.Errorf("after MariaDB kill -9: row %s = %s/%s/%s, want %v", id, label, qty, price, w)
		}
		n++
	}
	if n != len(state) {
		t.Errorf("after MariaDB kill -9: %d rows, want %d", n, len(state))
	}
	// The binlog survived the crash too.
	assertChanges(t, "binlog after MariaDB kill -9", readBinlog(t, db, start, dbName, "items", len(want)), want)
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// readBinlog streams the binlog from start and returns the first n row
// changes of db.table, naming columns from the TABLE_MAP event's metadata.
func readBinlog(t *testing.T, db *testbed.MySQL, start testbed.BinlogPosition, dbName, table string, n int) []rowChange {
	t.Helper()
	user, password := db.ReplCredentials()
	flavor, err := db.Flavor(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID:   testbed.NewServerID(),
		Flavor:     flavor,
		Host:       db.Host,
		Port:       uint16(db.Port),
		User:       user,
		Password:   password,
		UseDecimal: true,
	})
	defer syncer.Close()
	streamer, err := syncer.StartSync(mysql.Position{Name: start.File, Pos: start.Pos})
	if err != nil {
		t.Fatalf("starting binlog sync: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out []rowChange
	for len(out) < n {
		ev, err := streamer.GetEvent(ctx)
		if err != nil {
			t.Fatalf("reading binlog after %d of %d changes: %v", len(out), n, err)
		}
		re, ok := ev.Event.(*replication.RowsEvent)
		if !ok || string(re.Table.Schema) != dbName || string(re.Table.Table) != table {
			continue
		}
		if len(re.Table.ColumnName) == 0 {
			t.Fatal("TABLE_MAP has no column names: binlog_row_metadata is not FULL")
		}
		named := func(row []any) map[string]string {
			m := map[string]string{}
			for i, v := range row {
				s := fmt.Sprint(v)
				// go-mysql's decimal drops trailing zeros; the column's
				// scale (low byte of its metadata) restores the exact text.
				if d, ok := v.(decimal.Decimal); ok {
					s = d.StringFixed(int32(re.Table.ColumnMeta[i] & 0xff))
				}
				m[string(re.Table.ColumnName[i])] = s
			}
			return m
		}
		switch ev.Header.EventType {
		case replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2:
			for _, r := range re.Rows {
				out = append(out, rowChange{Op: "c", ID: fmt.Sprint(r[0]), Cols: named(r)})
			}
		case replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2:
			for i := 1; i < len(re.Rows); i += 2 {
				out = append(out, rowChange{Op: "u", ID: fmt.Sprint(re.Rows[i][0]), Cols: named(re.Rows[i])})
			}
		case replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2:
			for _, r := range re.Rows {
				out = append(out, rowChange{Op: "d", ID: fmt.Sprint(r[0]), Cols: named(r)})
			}
		}
	}
	return out
}

func assertChanges(t *testing.T, where string, got, want []rowChange) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d changes, want %d", where, len(got), len(want))
	}
	for i := range want {
		if g, w := fmt.Sprint(got[i]), fmt.Sprint(want[i]); g != w {
			t.Errorf("%s: change %d = %s, want %s", where, i, g, w)
		}
	}
}

// assertPerKeyOrder checks that, for every key, the consumed changes are
// exactly that key's changes in commit order.
func assertPerKeyOrder(t *testing.T, where string, got []rowChange, want []rowChange) {
	t.Helper()
	byKey := func(cs []rowChange) map[string][]string {
		m := map[string][]string{}
		for _, c := range cs {
			m[c.ID] = append(m[c.ID], fmt.Sprint(c))
		}
		return m
	}
	g, w := byKey(got), byKey(want)
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", where, len(got), len(want))
	}
	for k, ws := range w {
		if fmt.Sprint(g[k]) != fmt.Sprint(ws) {
			t.Errorf("%s: key %s got %v, want %v", where, k, g[k], ws)
		}
	}
}

func newClient(t *testing.T, bed *testbed.Bed, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bed.Kafka.Brokers()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// consumeAll reads n records of topic from the start, with a fresh client.
func consumeAll(t *testing.T, bed *testbed.Bed, topic string, n int) []rowChange {
	t.Helper()
	cl := newClient(t, bed, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var out []rowChange
	for len(out) < n {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s: got %d of %d records before timeout", topic, len(out), n)
		}
		fetches.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s/%d: %v", tp, p, err) })
		fetches.EachRecord(func(r *kgo.Record) {
			var c rowChange
			if err := json.Unmarshal(r.Value, &c); err != nil {
				t.Errorf("record %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
			}
			if string(r.Key) != c.ID {
				t.Errorf("record key %q does not match row id %q", r.Key, c.ID)
			}
			out = append(out, c)
		})
	}
	return out
}
