package cdc

import (
	"bytes"
	"context"
	sqldriver "database/sql/driver"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestClock(t *testing.T) {
	cases := []struct {
		why   string
		last  uint64
		ts    []uint32
		wants []uint64
	}{
		{"fresh clock follows commit time", 0, []uint32{100, 100, 101}, []uint64{100 << 20, 100<<20 + 1, 101 << 20}},
		{"a clock ahead of commit time keeps counting", 200 << 20, []uint32{100}, []uint64{200<<20 + 1}},
		{"a source clock stepped back never lowers the version", 0, []uint32{300, 200, 200}, []uint64{300 << 20, 300<<20 + 1, 300<<20 + 2}},
	}
	for _, c := range cases {
		clk := NewClock(c.last)
		for i, ts := range c.ts {
			if got := clk.Next(ts); got != c.wants[i] {
				t.Errorf("%s: Next(%d) = %d, want %d", c.why, ts, got, c.wants[i])
			}
		}
	}
	// Determinism: replaying the same log from the same checkpoint repeats
	// every version.
	a, b := NewClock(42), NewClock(42)
	for _, ts := range []uint32{1, 5, 5, 9, 3} {
		if a.Next(ts) != b.Next(ts) {
			t.Fatal("replay from one checkpoint gave different versions")
		}
	}
}

func TestPosition(t *testing.T) {
	cases := []struct {
		why, flavor, in string
		want            Position
		err             bool
	}{
		{"file and offset", "mysql", "binlog.000042:1234", Position{Flavor: "mysql", File: "binlog.000042", Pos: 1234}, false},
		{"MariaDB multi-domain GTID", "mariadb", "0-1-100,1-2-7", Position{Flavor: "mariadb", GTID: "0-1-100,1-2-7"}, false},
		{"MySQL GTID set", "mysql", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", Position{Flavor: "mysql", GTID: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"}, false},
		{"garbage is refused", "mariadb", "not a position", Position{}, true},
		{"a bad offset is refused", "mysql", "binlog.000001:x1", Position{}, true},
	}
	for _, c := range cases {
		got, err := parsePosition(c.flavor, c.in)
		if (err != nil) != c.err || (!c.err && got != c.want) {
			t.Errorf("%s: parsePosition(%q) = %+v, %v", c.why, c.in, got, err)
		}
	}
	a, _ := parsePosition("mariadb", "0-1-100,1-2-7")
	b, _ := parsePosition("mariadb", "0-1-90")
	if ok, err := a.Contains(b); !ok || err != nil {
		t.Errorf("0-1-100,1-2-7 should contain 0-1-90: %v %v", ok, err)
	}
	if ok, _ := b.Contains(a); ok {
		t.Error("0-1-90 should not contain 0-1-100,1-2-7")
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	cp := Checkpoint{Position: Position{Flavor: "mariadb", GTID: "0-1-5", File: "binlog.000001", Pos: 99}, LastVersion: 7 << 20}
	b, err := encodeCheckpoint(cp)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeCheckpoint(b)
	if err != nil || got.Position != cp.Position || got.LastVersion != cp.LastVersion {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	// A garbled checkpoint is refused, never used.
	garbled := []byte(strings.Replace(string(b), `0-1-5`, `0-1-6`, 1))
	if _, err := decodeCheckpoint(garbled); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Errorf("garbled checkpoint accepted: %v", err)
	}
	if _, err := decodeCheckpoint([]byte("{")); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Errorf("truncated checkpoint accepted: %v", err)
	}
}

func TestFixFraction(t *testing.T) {
	cases := []struct {
		why, in string
		digits  int
		want    string
	}{
		{"TIME(2) with a zero fraction gets its digits back (go-mysql#1184)", "00:00:00", 2, "00:00:00.00"},
		{"negative TIME", "-838:59:59", 2, "-838:59:59.00"},
		{"already right", "12:00:00.50", 2, "12:00:00.50"},
		{"zero datetime", "0000-00-00 00:00:00", 6, "0000-00-00 00:00:00.000000"},
		{"no fraction wanted", "2020-01-01", 0, "2020-01-01"},
	}
	for _, c := range cases {
		if got := fixFraction(c.in, c.digits); got != c.want {
			t.Errorf("%s: fixFraction(%q, %d) = %q, want %q", c.why, c.in, c.digits, got, c.want)
		}
	}
}

// FuzzAppendJSONString: whatever bytes a text column holds, the envelope
// stays valid JSON and valid UTF-8 text round-trips exactly; bytes (a
// snapshot's values) are encoded as the same string is (the binlog's).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote\" back\\ nl\n nul\x00", "😀 “x”", "\xff\xfe bad", "\u2028\u2029", "cut 😀"[:8], "\xf0\x9f\x98"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendJSONString(nil, s)
		if fromBytes := appendJSONString(nil, []byte(s)); string(fromBytes) != string(b) {
			t.Fatalf("bytes %q encoded as %q, the same string as %q", s, fromBytes, b)
		}
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("invalid JSON %q for %q: %v", b, s, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("round trip changed %q to %q", s, back)
		}
	})
}

// FuzzAppendValue drives the row decoder's output path — a go-mysql value
// for a column of each kind to its JSON — with arbitrary input: it must
// never panic, must produce valid JSON or an error, and must round-trip
// what it can (integers exactly, UTF-8 text exactly, binary via base64
// with BINARY(n) padding, ENUM/SET by member names).
func FuzzAppendValue(f *testing.F) {
	f.Add(uint8(0), int64(-1), []byte("x"), 8)
	f.Add(uint8(5), int64(0), []byte("héllo ✓"), 0)
	f.Add(uint8(6), int64(0), []byte{0, 1, 0xff}, 4)
	f.Add(uint8(8), int64(-3), []byte{}, 0)
	f.Add(uint8(9), int64(1<<40), []byte{}, 0)
	f.Fuzz(func(t *testing.T, kind uint8, n int64, raw []byte, width int) {
		col := column{name: "c", typeName: "t", kind: valueKind(kind % 11), members: []string{"a", "b", "c"}}
		var v any
		switch col.kind {
		case kindInt, kindBit:
			v = n
			if width%3 == 0 {
				col.unsignedBits = []int{8, 16, 24, 32, 64}[uint(width)%5]
			}
		case kindFloat32:
			v = float32(n) / 7
		case kindFloat64:
			v = float64(n) / 7
		case kindEnum, kindSet:
			v = n
		case kindBinary:
			v = raw
			col.padTo = width % 64
		default:
			v = string(raw)
		}
		out, err := col.appendValue(nil, v)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("kind %d value %#v gave invalid JSON %q", col.kind, v, out)
		}
		switch col.kind {
		case kindInt:
			if col.unsignedBits == 0 && string(out) != strconv.FormatInt(n, 10) {
				t.Fatalf("int %d gave %s", n, out)
			}
		case kindText, kindJSON:
			var s string
			if err := json.Unmarshal(out, &s); err != nil {
				t.Fatal(err)
			}
			if utf8.Valid(raw) && s != string(raw) {
				t.Fatalf("text %q came back as %q", raw, s)
			}
		case kindBinary:
			var s string
			_ = json.Unmarshal(out, &s)
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil || !bytes.HasPrefix(b, raw) || len(b) != max(len(raw), col.padTo) {
				t.Fatalf("binary %x (pad %d) came back as %x", raw, col.padTo, b)
			}
		}
	})
}

// TestAppendDatetime: the hand formatting of DATETIME/TIMESTAMP values
// equals time.Format's layout for every fractional width.
func TestAppendDatetime(t *testing.T) {
	layouts := []string{"2006-01-02 15:04:05", "2006-01-02 15:04:05.0", "2006-01-02 15:04:05.00", "2006-01-02 15:04:05.000",
		"2006-01-02 15:04:05.0000", "2006-01-02 15:04:05.00000", "2006-01-02 15:04:05.000000"}
	rnd := rand.New(rand.NewPCG(1, 2))
	times := []time.Time{time.Date(1970, 1, 1, 0, 0, 1, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(2038, 1, 19, 3, 14, 7, 120000000, time.UTC), time.Date(1000, 1, 1, 0, 0, 0, 1000, time.UTC)}
	for range 2000 {
		times = append(times, time.Unix(rnd.Int64N(253402300799), rnd.Int64N(1e6)*1000).UTC())
	}
	for _, tm := range times {
		for digits, layout := range layouts {
			// A column of n digits holds only n digits: cut the rest first.
			cut := tm.Truncate(time.Duration(math.Pow10(6-digits)) * time.Microsecond)
			got := string(appendDatetime(nil, cut, digits))
			if want := cut.Format(layout); got != want {
				t.Fatalf("%v with %d digits: %q, want %q", cut, digits, got, want)
			}
		}
	}
	col := column{name: "ts", kind: kindTemporal, fraction: 3}
	local := time.Date(2026, 3, 4, 5, 6, 7, 891000000, time.FixedZone("Samoa", -11*3600))
	if out, err := col.appendValue(nil, local); err != nil || string(out) != `"2026-03-04 16:06:07.891"` {
		t.Fatalf("a TIMESTAMP in another zone gave %s, %v; want it in UTC", out, err)
	}
}

// TestStoppedWhileStarting: a start-up step cut short by the stop — the
// cancellation itself, or the source connection it broke, which
// database/sql reports as bad — is a stop, not a failure; the same errors
// without a stop, or other errors during one, are failures.
func TestStoppedWhileStarting(t *testing.T) {
	live := context.Background()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	bad := fmt.Errorf("connecting to the source at 127.0.0.1:3306: %w", sqldriver.ErrBadConn)
	cut := fmt.Errorf("reading the columns of db.t: %w", context.Canceled)
	other := errors.New("producing to readside.db.t: NOT_ENOUGH_REPLICAS")
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want bool
	}{
		{stopped, bad, true}, {stopped, cut, true}, {stopped, other, false}, {stopped, nil, false},
		{live, bad, false}, {live, cut, false}, {live, other, false},
	} {
		if got := stoppedWhileStarting(c.ctx, c.err); got != c.want {
			t.Errorf("stopped %v, %v: %v, want %v", c.ctx.Err() != nil, c.err, got, c.want)
		}
	}
}

// TestCommitDueWhileOneRuns: a commit due by time (idle source,
// commit_interval) while the previous one still runs in the background is
// deferred — the stream reads on and commits when that one is done — so a
// source transaction read meanwhile goes out in the next commit, not the
// one after it. A commit due by size (commit_every) still waits for the
// running one, which bounds the records a backlog holds.
func TestCommitDueWhileOneRuns(t *testing.T) {
	newStream := func(records int) *stream {
		var cfg Config
		cfg.Kafka.CommitEvery, cfg.Kafka.CommitInterval = 100, time.Hour
		running := &pendingCommit{done: make(chan struct{})} // never over
		s := &stream{t: &Tailer{cfg: cfg, now: time.Now}, pub: &publisher{inflight: running, records: records},
			src: &sourceDB{}, clock: NewClock(0), sched: newCommitScheduler(cfg.Kafka)}
		s.sched.txns, s.sched.since = 1, time.Now()
		return s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()

	s := newStream(10)
	if err := s.maybeCommit(ctx, true); err != nil {
		t.Fatalf("an idle-source commit while one runs: %v, want it deferred", err)
	}
	if !s.sched.wanted || s.sched.txns != 1 || s.pub.records != 10 {
		t.Fatalf("deferred commit: wanted %v, pending %d, records %d; want true, 1, 10", s.sched.wanted, s.sched.txns, s.pub.records)
	}
	// Deferred, it is due at the next transaction end whatever the time.
	s.txnBegun = true
	if err := s.maybeCommit(ctx, false); err != nil || s.sched.txns != 1 {
		t.Fatalf("inside a source transaction: %v, pending %d; want nothing done", err, s.sched.txns)
	}

	full := newStream(100)
	err := full.maybeCommit(ctx, false)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a full commit while one runs: %v, want it to wait for the running one (here until the deadline)", err)
	}
	if full.sched.wanted {
		t.Fatal("a full commit was deferred")
	}
}
