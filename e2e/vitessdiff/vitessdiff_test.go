package vitessdiff

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"vitess.io/vitess/go/sqltypes"
	"vitess.io/vitess/go/vt/key"
	topodatapb "vitess.io/vitess/go/vt/proto/topodata"
	"vitess.io/vitess/go/vt/vtgate/vindexes"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/keyspace"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/sinks"
)

// value is one shard_by value of a column: as the tailer publishes it in
// an event (docs/events.md) and as MySQL returns it to a client, which is
// what VTGate receives, and hashes, when a client writes it in that form.
type value struct {
	event string // JSON
	mysql []byte // text protocol bytes
}

// column is a column type readside can shard by: its type in the event
// schema and in Vitess.
type column struct {
	event  string
	vitess sqltypes.Type
	values []value
}

// rangeSets are the sinks routed over: Vitess's usual splits and one with
// bounds of more than one byte.
var rangeSets = []string{"-", "-80,80-", "-40,40-80,80-c0,c0-", "-10,10-7f80,7f80-8001,8001-fe,fe-"}

// TestVitessXXHash: for every value of every column type, readside's
// keyspace id (the projector's routing of the event) is exactly the one
// Vitess's xxhash vindex Map gives, and readside's shard choice is the
// shard whose Vitess key range contains that id, for every range set.
func TestVitessXXHash(t *testing.T) {
	seed := uint64(20261125)
	if s := os.Getenv("VITESSDIFF_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("VITESSDIFF_SEED=%q: want a number", s)
		}
		seed = n
	}
	t.Logf("seed %d (VITESSDIFF_SEED overrides)", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	vdx, err := vindexes.CreateVindex("xxhash", "xxhash", nil)
	if err != nil {
		t.Fatal(err)
	}
	xx := vdx.(vindexes.SingleColumn)
	checked := 0
	for _, col := range matrix(rng) {
		for _, set := range rangeSets {
			p, sink := projection(t, col.event, set)
			var vranges []*topodatapb.KeyRange
			for _, r := range strings.Split(set, ",") {
				start, end, _ := strings.Cut(r, "-")
				kr, err := key.ParseKeyRangeParts(start, end)
				if err != nil {
					t.Fatal(err)
				}
				vranges = append(vranges, kr)
			}
			for _, v := range col.values {
				e, err := event.DecodeEvent([]byte(`{"op":"c","version":1,"after":{"k":` + v.event + `},"schema":{"version":"x","columns":{"k":` + strconv.Quote(col.event) + `}}}`))
				if err != nil {
					t.Fatalf("%s %s: %v", col.event, v.event, err)
				}
				ws, err := p.Writes(e)
				if err != nil || len(ws) != 1 {
					t.Fatalf("%s %s: writes %+v, %v", col.event, v.event, ws, err)
				}
				got := idBytes(ws[0].KeyspaceID)
				want := vitessID(t, xx, sqltypes.MakeTrusted(col.vitess, v.mysql))
				if !bytes.Equal(got, want) {
					t.Errorf("%s %s (MySQL %q): readside keyspace id %x, Vitess %x", col.event, v.event, v.mysql, got, want)
					continue
				}
				if r, w := sink.Route(p, ws[0]), vitessShard(vranges, want); len(r) != 1 || r[0] != w {
					t.Errorf("%s %s (keyspace id %x) over %s: readside shard %v, Vitess shard %d", col.event, v.event, want, set, r, w)
				}
				checked++
			}
		}
	}
	t.Logf("%d values × range sets agree with Vitess", checked)
}

// TestVitessNull: Vitess hashes NULL as no bytes (the id of ”); readside's
// routing function gives the same, though no NULL read key reaches a sink.
func TestVitessNull(t *testing.T) {
	vdx, err := vindexes.CreateVindex("xxhash", "xxhash", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := vitessID(t, vdx.(vindexes.SingleColumn), sqltypes.NULL)
	if got := idBytes(keyspace.ID(projections.ShardValue(projections.ValueOf(nil), 0))); !bytes.Equal(got, want) {
		t.Errorf("NULL: readside %x, Vitess %x", got, want)
	}
}

func vitessID(t *testing.T, xx vindexes.SingleColumn, v sqltypes.Value) []byte {
	t.Helper()
	dest, err := xx.Map(context.Background(), nil, []sqltypes.Value{v})
	if err != nil {
		t.Fatalf("Vitess Map(%v): %v", v, err)
	}
	id, ok := dest[0].(key.DestinationKeyspaceID)
	if !ok {
		t.Fatalf("Vitess Map(%v) gave %T, not a keyspace id", v, dest[0])
	}
	return []byte(id)
}

func vitessShard(ranges []*topodatapb.KeyRange, id []byte) int {
	for i, r := range ranges {
		if key.KeyRangeContains(r, id) {
			return i
		}
	}
	return -1
}

// idBytes is a readside keyspace id as Vitess holds it: its 8 bytes.
func idBytes(id uint64) []byte {
	return []byte{byte(id >> 56), byte(id >> 48), byte(id >> 40), byte(id >> 32), byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}
}

// projection is a projection sharded by column k of type typ over the
// shards of set, and its (unconnected) sink: routing needs no server.
func projection(t *testing.T, typ, set string) (*projections.Projection, *sinks.Sharded) {
	t.Helper()
	cfg := config.Default()
	cfg.Source.Tables = []string{"shop.t"}
	var shards []config.Shard
	for _, r := range strings.Split(set, ",") {
		shards = append(shards, config.Shard{KeyRange: r, DSN: "u:p@tcp(h:1)/reads"})
	}
	cfg.Sinks = map[string]config.Sink{"reads": {Shards: shards}}
	cfg.Projections = map[string]config.Projection{"t": {From: "shop.t", Sink: "reads", Key: []string{"k"}, ShardBy: "k", Columns: map[string]string{"k": "k"}}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatalf("%s over %s: %v", typ, set, err)
	}
	ranges, err := sinks.ShardRanges("reads", config.Sink{Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	sink := &sinks.Sharded{Name: "reads"}
	for _, r := range ranges {
		sink.Shards = append(sink.Shards, sinks.Shard{Range: r})
	}
	return ps[0], sink
}

// matrix is the values checked per column type: extremes, zero, negative
// numbers, every digit count, long and non-ASCII strings, binary values
// with zero bytes, date-times with and without fractions, and seeded
// random ones.
func matrix(rng *rand.Rand) []column {
	var cols []column
	ints := func(typ string, vt sqltypes.Type, lo int64, hi uint64) {
		c := column{event: typ, vitess: vt}
		add := func(s string) { c.values = append(c.values, value{event: s, mysql: []byte(s)}) }
		if lo < 0 {
			add(strconv.FormatInt(lo, 10))
			add(strconv.FormatInt(lo+1, 10))
			add("-1")
			for range 50 {
				add(strconv.FormatInt(-rng.Int64N(-(lo+1))-1, 10))
			}
		}
		add("0")
		add("1")
		add(strconv.FormatUint(hi, 10))
		add(strconv.FormatUint(hi-1, 10))
		for d := uint64(10); d <= hi/10 && d > 0; d *= 10 {
			add(strconv.FormatUint(d, 10))
			add(strconv.FormatUint(d-1, 10))
		}
		for range 200 {
			add(strconv.FormatUint(rng.Uint64N(hi), 10))
		}
		cols = append(cols, c)
	}
	ints("tinyint", sqltypes.Int8, math.MinInt8, math.MaxInt8)
	ints("tinyint unsigned", sqltypes.Uint8, 0, math.MaxUint8)
	ints("smallint", sqltypes.Int16, math.MinInt16, math.MaxInt16)
	ints("smallint unsigned", sqltypes.Uint16, 0, math.MaxUint16)
	ints("mediumint", sqltypes.Int24, -1<<23, 1<<23-1)
	ints("mediumint unsigned", sqltypes.Uint24, 0, 1<<24-1)
	ints("int", sqltypes.Int32, math.MinInt32, math.MaxInt32)
	ints("int unsigned", sqltypes.Uint32, 0, math.MaxUint32)
	ints("bigint", sqltypes.Int64, math.MinInt64, math.MaxInt64)
	ints("bigint unsigned", sqltypes.Uint64, 0, math.MaxUint64)
	// YEAR holds 0 and 1901-2155, and MySQL prints it with four digits
	// (year 0 as 0000), which is the text a client sends VTGate.
	year := column{event: "year", vitess: sqltypes.Year}
	for _, y := range append([]int{0}, func() []int {
		var ys []int
		for y := 1901; y <= 2155; y++ {
			ys = append(ys, y)
		}
		return ys
	}()...) {
		year.values = append(year.values, value{event: strconv.Itoa(y), mysql: fmt.Appendf(nil, "%04d", y)})
	}
	cols = append(cols, year)

	dec := column{event: "decimal(30,10)", vitess: sqltypes.Decimal}
	for _, s := range []string{"0.0000000000", "-0.5000000000", "0.0000000001", "-0.0000000001", "99999999999999999999.9999999999", "-99999999999999999999.9999999999", "1.0000000000"} {
		dec.values = append(dec.values, value{event: strconv.Quote(s), mysql: []byte(s)})
	}
	for range 200 {
		s := fmt.Sprintf("%d.%010d", rng.Int64N(1e18)-5e17, rng.Int64N(1e10))
		dec.values = append(dec.values, value{event: strconv.Quote(s), mysql: []byte(s)})
	}
	cols = append(cols, dec)
	dec0 := column{event: "decimal(10,0)", vitess: sqltypes.Decimal}
	for _, s := range []string{"0", "-1", "9999999999", "-9999999999", "42"} {
		dec0.values = append(dec0.values, value{event: strconv.Quote(s), mysql: []byte(s)})
	}
	cols = append(cols, dec0)

	// Strings: events carry UTF-8 whatever the column's charset (latin1,
	// gbk, utf8mb3 and utf8mb4 are converted by the tailer), and VTGate
	// receives UTF-8 from a utf8mb4 client, so a character hashes as its
	// UTF-8 bytes under every charset and collation readside supports.
	texts := []string{"", " ", "a", "A", "test1", "42", "-1", "O'Brien", `back\slash`, "quote\"d", "tab\tnew\nline\r", "nul\x00byte",
		"\x01\x1f\x7f", "á", "Ärger", "中文", "日本語のテキスト", "😀", "𝄞 clef", "\u2028\u2029", "\ufeffbom", "e\u0301",
		"<script>&amp;</script>", strings.Repeat("x", 1000), strings.Repeat("é😀", 250), "trailing ", "  leading"}
	for range 300 {
		texts = append(texts, randomText(rng))
	}
	for _, typ := range []struct {
		event  string
		vitess sqltypes.Type
	}{{"varchar", sqltypes.VarChar}, {"char", sqltypes.Char}, {"text", sqltypes.Text}, {"enum", sqltypes.Enum}, {"set", sqltypes.Set}} {
		c := column{event: typ.event, vitess: typ.vitess}
		for _, s := range texts {
			c.values = append(c.values, value{event: jsonString(s), mysql: []byte(s)})
		}
		cols = append(cols, c)
	}

	bins := [][]byte{{}, {0}, {0, 0, 0, 0}, {0xff}, {0xff, 0xfe, 0xfd}, []byte("a\x00\x00\x00"), []byte("\x00a"), {0xc3, 0x28}, bytes.Repeat([]byte{0xab, 0}, 700)}
	for range 300 {
		b := make([]byte, rng.IntN(64))
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		bins = append(bins, b)
	}
	for _, typ := range []struct {
		event  string
		vitess sqltypes.Type
	}{{"varbinary", sqltypes.VarBinary}, {"binary(4)", sqltypes.Binary}, {"blob", sqltypes.Blob}} {
		c := column{event: typ.event, vitess: typ.vitess}
		for _, b := range bins {
			c.values = append(c.values, value{event: strconv.Quote(base64.StdEncoding.EncodeToString(b)), mysql: b})
		}
		cols = append(cols, c)
	}

	temporal := func(typ string, vt sqltypes.Type, vals []string, random func() string) {
		c := column{event: typ, vitess: vt}
		for range 200 {
			vals = append(vals, random())
		}
		for _, s := range vals {
			c.values = append(c.values, value{event: strconv.Quote(s), mysql: []byte(s)})
		}
		cols = append(cols, c)
	}
	date := func() string {
		return fmt.Sprintf("%04d-%02d-%02d", 1000+rng.IntN(9000), 1+rng.IntN(12), 1+rng.IntN(28))
	}
	clock := func() string { return fmt.Sprintf("%02d:%02d:%02d", rng.IntN(24), rng.IntN(60), rng.IntN(60)) }
	temporal("date", sqltypes.Date, []string{"0000-00-00", "1000-01-01", "9999-12-31", "2020-02-29"}, date)
	temporal("datetime", sqltypes.Datetime, []string{"0000-00-00 00:00:00", "1000-01-01 00:00:00", "9999-12-31 23:59:59"},
		func() string { return date() + " " + clock() })
	temporal("datetime(6)", sqltypes.Datetime, []string{"2020-01-02 03:04:05.000000", "2020-01-02 03:04:05.012300", "9999-12-31 23:59:59.999999"},
		func() string { return date() + " " + clock() + fmt.Sprintf(".%06d", rng.IntN(1e6)) })
	temporal("timestamp(3)", sqltypes.Timestamp, []string{"1970-01-01 00:00:01.000", "2038-01-19 03:14:07.999"},
		func() string { return date() + " " + clock() + fmt.Sprintf(".%03d", rng.IntN(1e3)) })
	temporal("time(2)", sqltypes.Time, []string{"-838:59:59.00", "838:59:59.00", "00:00:00.00", "-00:00:01.50"},
		func() string {
			return fmt.Sprintf("%d:%02d:%02d.%02d", rng.IntN(839)-419, rng.IntN(60), rng.IntN(60), rng.IntN(100))
		})

	// BIT(n): a number in events; MySQL returns (and Vitess hashes) its
	// pattern in ceil(n/8) big-endian bytes.
	for _, n := range []int{1, 7, 8, 12, 33, 64} {
		c := column{event: fmt.Sprintf("bit(%d)", n), vitess: sqltypes.Bit}
		max := uint64(math.MaxUint64) >> (64 - n)
		us := []uint64{0, 1, max, max >> 1}
		for range 50 {
			us = append(us, rng.Uint64()&max)
		}
		for _, u := range us {
			b := make([]byte, (n+7)/8)
			for i := range b {
				b[len(b)-1-i] = byte(u >> (8 * i))
			}
			c.values = append(c.values, value{event: strconv.FormatUint(u, 10), mysql: b})
		}
		cols = append(cols, c)
	}
	return cols
}

// randomText is up to 40 characters from ASCII, Latin, CJK and emoji.
func randomText(rng *rand.Rand) string {
	ranges := [][2]rune{{0x20, 0x7e}, {0xa0, 0x17f}, {0x4e00, 0x9fff}, {0x1f300, 0x1f64f}, {0x1, 0x1f}}
	var b strings.Builder
	for range rng.IntN(40) {
		r := ranges[rng.IntN(len(ranges))]
		b.WriteRune(r[0] + rune(rng.IntN(int(r[1]-r[0]+1))))
	}
	return b.String()
}

// jsonString is s as a JSON string (valid UTF-8 in, as the tailer's).
func jsonString(s string) string {
	if !utf8.ValidString(s) {
		panic("not UTF-8: " + s)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
