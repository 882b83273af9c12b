package projections

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
)

// TestBuildMatchesEventByEvent: Build decodes a poll with one Decoder that
// carries schemas, sources and column names from event to event and
// reuses row images; its batch must be exactly what each record decoded
// on its own gives — inserts, updates in place, key moves, rows entering
// and leaving the filter, deletes and their tombstones, parents, across
// two tables, two schema versions and two column orders.
func TestBuildMatchesEventByEvent(t *testing.T) {
	cfg := baseConfig()
	cfg.Source.Tables = []string{"chat.messages", "chat.users"}
	pc := cfg.Projections["messages_by_sender"]
	pc.Where = "body <> 'hidden'"
	pc.Join = []config.Join{{From: "chat.users", On: map[string]string{"id": "sender_id"}, Columns: map[string]string{"sender_name": "name"}}}
	cfg.Projections["messages_by_sender"] = pc
	ps, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	typeWhere(t, p, messagesDefs)
	schemaV1 := `{"version":"v1","columns":{"id":"bigint","sender_id":"int","created_at":"datetime","body":"text"}}`
	// Version 2 makes body a blob (base64 in events, bound as bytes): the
	// kinds Build keeps per schema must follow.
	schemaV2 := `{"version":"v2","columns":{"id":"bigint","sender_id":"int","created_at":"datetime","body":"blob","extra":"int"}}`
	msg := func(id, sender int, body string, extra bool) string {
		s := fmt.Sprintf(`{"id":%d,"sender_id":%d,"created_at":"2026-01-02 03:04:05","body":%q`, id, sender, body)
		if extra {
			s += `,"extra":7`
		}
		return s + "}"
	}
	var records []Record
	version := uint64(100)
	add := func(topic, op, key, before, after, schema, gtid string) {
		version++
		v := fmt.Sprintf(`{"op":%q,"version":%d,"key":%s,"before":%s,"after":%s,"source":{"flavor":"mariadb","server_id":1,"gtid":%q,"ts_sec":%d},"schema":%s}`,
			op, version, key, before, after, gtid, 1700000000+version/4, schema)
		records = append(records, Record{Topic: topic, Partition: int32(len(records) % 3), Offset: int64(len(records)), Value: []byte(v)})
	}
	msgs, users := p.Topic, p.Joins[0].Topic
	add(msgs, "c", `{"id":1}`, "null", msg(1, 10, "hello", false), schemaV1, "0-1-1")
	add(msgs, "c", `{"id":2}`, "null", msg(2, 11, "hidden", false), schemaV1, "0-1-1")
	add(users, "c", `{"id":10}`, "null", `{"id":10,"name":"ann"}`, `{"version":"u1","columns":{"id":"int","name":"varchar(20)"}}`, "0-1-2")
	add(msgs, "u", `{"id":1}`, msg(1, 10, "hello", false), msg(1, 10, "hello again", false), schemaV1, "0-1-3")
	add(msgs, "u", `{"id":1}`, msg(1, 10, "hello again", false), msg(1, 12, "moved", false), schemaV1, "0-1-3") // key move
	add(msgs, "u", `{"id":2}`, msg(2, 11, "hidden", false), msg(2, 11, "shown", false), schemaV1, "0-1-4")      // enters the filter
	add(msgs, "u", `{"id":1}`, msg(1, 12, "moved", false), msg(1, 12, "hidden", false), schemaV1, "0-1-5")      // leaves it
	add(users, "u", `{"id":10}`, `{"id":10,"name":"ann"}`, `{"id":11,"name":"bo\u00e9"}`, `{"version":"u1","columns":{"id":"int","name":"varchar(20)"}}`, "0-1-6")
	add(msgs, "c", `{"id":3}`, "null", msg(3, 10, "YSAicXVvdGVkIiBcIGJvZHk=", true), schemaV2, "0-1-7") // body as a blob from here on
	add(msgs, "d", `{"id":3}`, msg(3, 10, "YSAicXVvdGVkIiBcIGJvZHk=", true), "null", schemaV2, "0-1-8")
	records = append(records, Record{Topic: msgs, Partition: 1, Offset: int64(len(records))}) // the tombstone after a delete
	add(msgs, "c", `{"id":4}`, "null", msg(4, 13, "w6kgw7w=", true), schemaV2, "0-1-8")
	add(msgs, "u", `{"id":2}`, msg(2, 11, "w6kgw7w=", true), msg(2, 11, "AP8gYmluYXJ5", true), schemaV2, "0-1-9")
	// The same schema with the columns in another order, then back: the
	// positions Build keeps per column list must follow.
	add(msgs, "c", `{"id":5}`, "null", `{"extra":7,"body":"AAEC","created_at":"2026-01-02 03:04:05","sender_id":14,"id":5}`, schemaV2, "0-1-10")
	add(msgs, "c", `{"id":6}`, "null", msg(6, 15, "AQI=", true), schemaV2, "0-1-10")

	got, bad := p.Build(records)
	if len(bad) > 0 {
		t.Fatalf("rejected: %v", bad[0].Reason)
	}
	want := &Batch{Offsets: event.Offsets{}}
	for k := range records {
		r := &records[k]
		want.Offsets.Set(r.Topic, r.Partition, r.Offset+1)
		if r.Value == nil {
			continue
		}
		e, err := event.DecodeEvent(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if r.Topic == msgs {
			ws, err := p.Writes(e)
			if err != nil {
				t.Fatal(err)
			}
			for i := range ws {
				ws[i].From = r
			}
			want.Writes = append(want.Writes, ws...)
		} else {
			ws, err := p.ParentWrites(0, e)
			if err != nil {
				t.Fatal(err)
			}
			for i := range ws {
				ws[i].From = r
			}
			want.Parents = append(want.Parents, ws...)
		}
	}
	want.Writes, want.Parents = Coalesce(want.Writes), CoalesceParents(want.Parents)
	binary := 0
	for _, w := range want.Writes {
		if len(w.Values) > 3 {
			if w.Values[3].Kind() == BytesValue {
				binary++
			}
		}
	}
	if binary < 2 || len(want.Writes) < 4 || len(want.Parents) < 2 {
		t.Fatalf("the records make %d writes (%d with a blob body) and %d parent writes: too few to test anything", len(want.Writes), binary, len(want.Parents))
	}
	if !reflect.DeepEqual(got.Writes, want.Writes) {
		t.Errorf("writes:\n got %+v\nwant %+v", got.Writes, want.Writes)
	}
	if !reflect.DeepEqual(got.Parents, want.Parents) {
		t.Errorf("parent writes:\n got %+v\nwant %+v", got.Parents, want.Parents)
	}
	// What coalescing dropped must not keep its record (and the fetch
	// buffer under it) alive while the batch is applied.
	for i, w := range got.Writes[len(got.Writes):cap(got.Writes)] {
		if w.From != nil || w.Values != nil {
			t.Errorf("write %d past the batch's end still holds %+v", len(got.Writes)+i, w)
		}
	}
	if !reflect.DeepEqual(got.Offsets, want.Offsets) {
		t.Errorf("offsets: got %v, want %v", got.Offsets, want.Offsets)
	}
}
