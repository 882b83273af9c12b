package event

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// A narrow update as the tailer publishes it (bench workload
// narrow_update_zipf).
var benchEvent = []byte(`{"op":"u","version":1869683302580224001,"db":"src_1_1","table":"narrow_update_zipf","key":{"id":17},"before":{"id":17,"k":17,"a":482211,"b":"name-17-2kq9x8v1r0s3","c":"81234.55","d":"2026-01-09 11:52:16.123456","commit_us":1780000000123456},"after":{"id":17,"k":17,"a":90311,"b":"name-17-1zz0k3m7a9q2","c":"4411.20","d":"2026-01-02 03:04:05.654321","commit_us":1780000001234567},"source":{"flavor":"mariadb","server_id":1,"file":"binlog.000001","pos":123456,"gtid":"0-1-4242","ts_sec":1780000001},"txn":{"id":"0-1-4242","seq":12},"schema":{"version":"9f0c1d2e3a4b5c6d","columns":{"id":"bigint","k":"int","a":"int","b":"varchar(60)","c":"decimal(12,2)","d":"datetime(6)","commit_us":"bigint"}}}`)

// A wide insert (bench workload wide_insert: ~1.2 KB of row, most of it
// in long text values).
var benchWideEvent = []byte(`{"op":"c","version":1869683302580224001,"db":"src_1_1","table":"wide_insert","key":{"id":17},"before":null,"after":{"id":17,"k":17,"a":482211,` +
	`"t1":"` + strings.Repeat("lorem ipsum dolor sit amet ", 10) + `","t2":"` + strings.Repeat("consectetur adipiscing elit ", 10) + `",` +
	`"t3":"` + strings.Repeat("sed do eiusmod tempor incid ", 10) + `","t4":"` + strings.Repeat("ut labore et dolore magna al ", 10) + `",` +
	`"c":"81234.55","d":"2026-01-09 11:52:16.123456","commit_us":1780000000123456},"source":{"flavor":"mariadb","server_id":1,"file":"binlog.000001","pos":123456,"gtid":"0-1-4242","ts_sec":1780000001},"txn":{"id":"0-1-4242","seq":12},` +
	`"schema":{"version":"0a0c1d2e3a4b5c6d","columns":{"id":"bigint","k":"int","a":"int","t1":"text","t2":"text","t3":"text","t4":"text","c":"decimal(12,2)","d":"datetime(6)","commit_us":"bigint"}}}`)

func BenchmarkDecodeEventWide(b *testing.B) { benchDecode(b, benchWideEvent) }
func BenchmarkDecodeEvent(b *testing.B)     { benchDecode(b, benchEvent) }

// benchDecode decodes event as Build does: one Decoder for a run of events.
func benchDecode(b *testing.B, event []byte) {
	b.ReportAllocs()
	var d Decoder
	for b.Loop() {
		if _, err := d.Decode(event); err != nil {
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
		if e.Schema == nil || e.Schema.Columns["c"] != "decimal(12,2)" || len(e.Schema.Columns) != 7 || e.Version != 1869683302580224001 || string(e.After.Map()["a"]) != "90311" {
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

// decodeEventReference is the envelope decoded by encoding/json alone
// (DecodeEvent's fallback): what DecodeEvent must agree with.
var decodeEventReference = decodeEventStd

func BenchmarkDecodeEventReference(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeEventReference(benchEvent); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzDecodeEvent: the hand-written scanner accepts exactly what
// encoding/json accepts and decodes it to the same event.
func FuzzDecodeEvent(f *testing.F) {
	f.Add(benchEvent)
	for _, s := range []string{
		`{"op":"t","version":5,"schema":null}`,
		`{"op":"c","version":5,"after":{"id":1,"s":"a\"b\\u00e9\n","n":null,"x":[1,{"y":true}],"f":-1.5e+3},"source":{"ts_sec":7,"gtid":"0-1-2","file":"b"}}`,
		`{"op":"d","version":5,"before":{"id":1},"after":null,"OP":"u"}`,
		`{"op":"c","version":5,"after":{"a":1},"after":{"b":2}}`,
		`{"op":"c","version":"5"}`, `{"op":"c","version":-1}`, `{"op":"c","version":1e3}`,
		`{"op":"c","version":5,"after":{"s":"\xff\xfe"}}`, `{"op":"c","version":5} x`, `[1]`, `{"op":"c","version":5,}`, `{"op":"c","version":05}`,
		`{"op":"u","version":5,"source":{"TS_SEC":9}}`, `{"op":"u","version":5,"source":null,"before":5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, refErr := decodeEventReference(b)
		got, err := DecodeEvent(b)
		check(t, b, got, err, want, refErr, false)
		// A Decoder that has seen other events (what it keeps from them
		// must not leak into this one), then this one again (what it
		// keeps from this one must give the same event).
		var d Decoder
		if _, err := d.Decode(benchEvent); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			got, err := d.Decode(b)
			check(t, b, got, err, want, refErr, true)
		}
	})
}

// check compares DecodeEvent's result with encoding/json's. A Decoder's
// schema may be an equal copy from before the shared cache was reset, so
// with anySchema the schemas are compared by value.
func check(t *testing.T, b []byte, got Event, err error, want Event, refErr error, anySchema bool) {
	t.Helper()
	if (err == nil) != (refErr == nil) {
		t.Fatalf("%q: DecodeEvent error %v, encoding/json error %v", b, err, refErr)
	}
	if err != nil {
		return
	}
	sameSchema := got.Schema == want.Schema || anySchema && reflect.DeepEqual(got.Schema, want.Schema)
	norm := func(im *Image) map[string]string {
		m := im.Map()
		if m == nil {
			return nil
		}
		out := map[string]string{}
		for k, v := range m {
			out[k] = string(v)
		}
		return out
	}
	if got.Op != want.Op || got.Version != want.Version || got.SourceTS != want.SourceTS || !sameSchema ||
		!reflect.DeepEqual(norm(got.Before), norm(want.Before)) || !reflect.DeepEqual(norm(got.After), norm(want.After)) ||
		!reflect.DeepEqual(got.Source, want.Source) {
		t.Fatalf("%q:\n got %+v\nwant %+v", b, got, want)
	}
}

// TestDecodeLongStrings: strings of every length up to a few words, with
// an escape, a control character, non-ASCII or the closing quote at every
// offset, decode as encoding/json decodes them, or fail where it fails
// (for a string scan that would step over several bytes at a time).
func TestDecodeLongStrings(t *testing.T) {
	for n := range 48 {
		for at := range n + 1 {
			for _, special := range []string{`\"`, `\\`, `\u00e9`, "\x01", `"`, "é"} {
				body := strings.Repeat("x", at) + special + strings.Repeat("y", n-at)
				b := []byte(`{"op":"c","version":5,"after":{"s":"` + body + `","t":1}}`)
				want, refErr := decodeEventReference(b)
				got, err := DecodeEvent(b)
				check(t, b, got, err, want, refErr, false)
			}
		}
	}
}

// TestDecoderSequence: a Decoder reuses what consecutive events share —
// the source member's bytes, the column names by position — and each
// event still decodes as it does alone, whatever came before it: sources
// repeated, changed, null and given twice; images whose columns change
// order, number and spelling; versions at and past 19 digits.
func TestDecoderSequence(t *testing.T) {
	src := func(pos int) string {
		return `"source":{"flavor":"mariadb","server_id":1,"file":"binlog.000001","pos":` + strconv.Itoa(pos) + `,"gtid":"0-1-7","ts_sec":1780000001}`
	}
	events := []string{
		`{"op":"c","version":11,"after":{"id":1,"a":"x","b":2},` + src(100) + `}`,
		`{"op":"c","version":12,"after":{"id":2,"a":"y","b":3},` + src(100) + `}`,
		`{"op":"c","version":13,"after":{"id":3,"a":"z","b":4},` + src(200) + `}`,
		`{"op":"c","version":14,"after":{"id":4,"a":"z","b":4},"source":{"ts_sec":5},"source":{"gtid":"0-1-8"}}`,
		`{"op":"c","version":15,"after":{"id":5,"a":"z","b":4},"source":{"ts_sec":5}}`,
		`{"op":"c","version":16,"after":{"id":6},"source":null}`,
		`{"op":"c","version":17,"after":{"id":7,"a":"z","b":4},` + src(200) + `}`,
		`{"op":"c","version":18,"after":{"b":1,"id":8,"a":"q"},` + src(200) + `}`,
		`{"op":"c","version":19,"after":{"b":1,"id":9,"a":"q","extra":true},` + src(200) + `}`,
		`{"op":"c","version":20,"after":{"b":1,"i\u0064":10,"a":"q"},` + src(200) + `}`,
		`{"op":"u","version":21,"before":{"id":11,"a":"q","b":5},"after":{"id":11,"a":"r","b":5},` + src(300) + `}`,
		`{"op":"c","version":9999999999999999999,"after":{"id":12}}`,
		`{"op":"c","version":18446744073709551615,"after":{"id":13}}`,
		`{"op":"c","version":18446744073709551616,"after":{"id":14}}`,
		`{"op":"c","version":00000000000000000001,"after":{"id":15}}`,
		`{"op":"c","version":1.5,"after":{"id":16}}`,
		`{"op":"c","version":-1,"after":{"id":17}}`,
		`{"op":"c","version":22,"after":{"id":18,"a":"z","b":4},` + src(200) + `}`,
	}
	var d Decoder
	for _, pass := range []string{"in order", "again"} {
		for _, s := range events {
			b := []byte(s)
			want, refErr := decodeEventReference(b)
			got, err := d.Decode(b)
			t.Run(pass, func(t *testing.T) { check(t, b, got, err, want, refErr, true) })
		}
	}
}
