package debezium

import (
	"strings"
	"testing"

	"github.com/readside/readside/config"
)

// The expected values are what Debezium 3.5's MariaDB connector wrote for
// the same source values (captured from the connector; the differential
// test TestDebeziumMatchesConnector checks the whole events live).
// notNull marks the case of a NOT NULL column.
const notNull = "a zero date in a NOT NULL column is the epoch, Debezium's fallback"

// valueCase is one column value and what Debezium writes for it.
type valueCase struct {
	why      string
	typ      string
	m        config.Debezium
	raw      string
	want     string
	snapshot bool
}

// valueCases are TestValues' cases; TestAvroDirect encodes each in Avro too.
func valueCases() []valueCase {
	def := config.Default().Kafka.Debezium
	with := func(f func(*config.Debezium)) config.Debezium {
		m := def
		f(&m)
		return m
	}
	precise := with(func(m *config.Debezium) { m.Bigint.Unsigned.Handling.Mode = config.UnsignedPrecise })
	str := with(func(m *config.Debezium) { m.Decimal.Handling.Mode = config.DecimalString })
	dbl := with(func(m *config.Debezium) { m.Decimal.Handling.Mode = config.DecimalDouble })
	connect := with(func(m *config.Debezium) { m.Time.Precision.Mode = config.TimeConnect })
	hex := with(func(m *config.Debezium) { m.Binary.Handling.Mode = config.BinaryHex })
	url := with(func(m *config.Debezium) { m.Binary.Handling.Mode = config.BinaryBase64URLSafe })
	return []valueCase{
		{"precise decimal: base64 of the unscaled big-endian value", "decimal(10,2)", def, `"12345678.91"`, `"SZYC0w=="`, false},
		{"a negative decimal is two's complement in the fewest bytes", "decimal(10,2)", def, `"-0.05"`, `"+w=="`, false},
		{"a decimal of scale = precision", "decimal(5,5)", def, `"0.12345"`, `"MDk="`, false},
		{"a decimal wider than 64 bits", "decimal(30,0)", def, `"123456789012345678901234567890"`, `"AY7pD/bDc+DuTj8K0g=="`, false},
		{"a positive decimal whose top bit is set gets a zero byte", "decimal(5,0)", def, `"128"`, `"AIA="`, false},
		{"decimal.handling.mode=string keeps the scale's digits", "decimal(10,2)", str, `"-0.50"`, `"-0.50"`, false},
		{"decimal.handling.mode=double", "decimal(10,2)", dbl, `"-0.50"`, `-0.5`, false},
		{"BIGINT UNSIGNED under long wraps the maximum to -1, as Debezium does", "bigint unsigned", def, `18446744073709551615`, `-1`, false},
		{"… and 2^63 to the minimum long", "bigint unsigned", def, `9223372036854775808`, `-9223372036854775808`, false},
		{"precise keeps 2^64-1 as a decimal of scale 0", "bigint unsigned", precise, `18446744073709551615`, `"AP//////////"`, false},
		{"INT UNSIGNED is an int64 and needs no wrap", "int unsigned", def, `4294967295`, `4294967295`, false},
		{"BIT(1) is a boolean", "bit(1)", def, `1`, `true`, false},
		{"BIT(n) is little-endian bytes", "bit(16)", def, `32769`, `"AYA="`, false},
		{"BIT(5) is one byte", "bit(5)", def, `21`, `"FQ=="`, false},
		{"BIT(64) all ones", "bit(64)", def, `18446744073709551615`, `"//////////8="`, false},
		{"DATE is days since the epoch", "date", def, `"2024-02-29"`, `19782`, false},
		{"a two-digit year is adjusted as Debezium's enable.time.adjuster does (0001 is 2001)", "date", def, `"0001-01-01"`, `11323`, false},
		{"a zero date names no day: null", "date", def, `"0000-00-00"`, `null`, false},
		{notNull, "datetime(6)", def, `"0000-00-00 00:00:00.000000"`, `0`, false},
		{"the zero TIMESTAMP is the epoch's first second, as the binlog stores it", "timestamp", def, `"0000-00-00 00:00:00"`, `"1970-01-01T00:00:00Z"`, false},
		{"DATETIME(0) is milliseconds", "datetime", def, `"2024-02-29 13:14:15"`, `1709212455000`, false},
		{"DATETIME(3) is milliseconds", "datetime(3)", def, `"2024-02-29 13:14:15.123"`, `1709212455123`, false},
		{"DATETIME(6) is microseconds", "datetime(6)", def, `"2024-02-29 13:14:15.123456"`, `1709212455123456`, false},
		{"connect mode: DATETIME(6) is milliseconds, the microseconds lost", "datetime(6)", connect, `"2024-02-29 13:14:15.123456"`, `1709212455123`, false},
		{"TIMESTAMP is an ISO string in UTC", "timestamp", def, `"2024-03-01 00:14:15"`, `"2024-03-01T00:14:15Z"`, false},
		{"TIMESTAMP(6) keeps its digits", "timestamp(6)", def, `"2024-03-01 00:14:15.654321"`, `"2024-03-01T00:14:15.654321Z"`, false},
		{"a binlog TIMESTAMP(6) keeps the column's digits, trailing zeros too", "timestamp(6)", def, `"2024-03-01 00:14:15.654300"`, `"2024-03-01T00:14:15.654300Z"`, false},
		{"a snapshot's drops trailing zeros, as Debezium's snapshot writes them", "timestamp(6)", def, `"2024-03-01 00:14:15.654300"`, `"2024-03-01T00:14:15.6543Z"`, true},
		{"… and a zero fraction", "timestamp(3)", def, `"2024-03-01 00:14:15.000"`, `"2024-03-01T00:14:15Z"`, true},
		{"TIME is microseconds, negative kept", "time", def, `"-838:59:59"`, `-3020399000000`, false},
		{"TIME over 24 hours", "time(3)", def, `"25:00:00.500"`, `90000500000`, false},
		{"TIME just below zero", "time(6)", def, `"-00:00:01.000001"`, `-1000001`, false},
		{"connect mode: TIME is milliseconds of the day", "time(3)", connect, `"23:59:59.999"`, `86399999`, false},
		{"connect mode: a TIME past 24 hours is no time of day: null, as Debezium writes it", "time(3)", connect, `"25:00:00.500"`, `null`, false},
		{"connect mode: 24:00:00 itself is kept, as Debezium keeps it", "time", connect, `"24:00:00"`, `86400000`, false},
		{"connect mode: a microsecond past 24:00:00 is null", "time(6)", connect, `"24:00:00.000001"`, `null`, false},
		{"connect mode: a negative TIME is null", "time(6)", connect, `"-00:00:01.000001"`, `null`, false},
		{"binary bytes: the JSON converter's base64, BINARY padding included", "binary(4)", def, `"AQIAAA=="`, `"AQIAAA=="`, false},
		{"binary.handling.mode=hex", "varbinary", hex, `"/wA="`, `"ff00"`, false},
		{"binary.handling.mode=base64-url-safe", "varbinary", url, `"/wA="`, `"_wA="`, false},
		{"NULL is null in every type", "decimal(10,2)", def, `null`, `null`, false},
		{"text as it is", "varchar", def, `"héllo"`, `"héllo"`, false},
		{"YEAR is an int", "year", def, `2024`, `2024`, false},
	}
}

func TestValues(t *testing.T) {
	for _, c := range valueCases() {
		f, err := compile(Column{Name: "c", Type: c.typ, Optional: true}, c.m)
		if c.why == notNull {
			f.optional = false
		}
		if err != nil {
			t.Errorf("%s: %v", c.why, err)
			continue
		}
		got, err := f.appendValue(nil, []byte(c.raw), &c.m, c.snapshot)
		if err != nil {
			t.Errorf("%s: %v", c.why, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s: %s %s became %s, want %s", c.why, c.typ, c.raw, got, c.want)
		}
	}
}

func TestTopic(t *testing.T) {
	cases := []struct{ why, db, table, want string }{
		{"plain names as they are", "shop", "orders", "p.shop.orders"},
		{"characters Kafka refuses become _, as Debezium's topic naming does", "shop", "order lines$", "p.shop.order_lines_"},
	}
	for _, c := range cases {
		if got := Topic("p", c.db, c.table); got != c.want {
			t.Errorf("%s: %s", c.why, got)
		}
	}
}

func TestGeometryRefused(t *testing.T) {
	_, err := NewTable("p", "mariadb", "d", "t", []Column{{Name: "id", Type: "int"}, {Name: "g", Type: "geometry"}}, []int{0}, config.Default().Kafka.Debezium)
	if err == nil || !strings.Contains(err.Error(), "source.exclude_columns") {
		t.Errorf("geometry: %v, want a refusal naming the fix", err)
	}
}

func TestTopicCollisions(t *testing.T) {
	cases := []struct {
		why    string
		tables []string
		want   int
	}{
		{"distinct plain names share nothing", []string{"shop.orders", "shop.lines"}, 0},
		{"a space and an underscore become one topic, which readside refuses to mix", []string{"shop.a b", "shop.a_b"}, 1},
	}
	for _, c := range cases {
		if got := TopicCollisions("p", c.tables); len(got) != c.want {
			t.Errorf("%s: %v", c.why, got)
		}
	}
}

// TestTransactionTopicCollision: topic.transaction may hold dots, and
// then name a captured table's topic; the default never can.
func TestTransactionTopicCollision(t *testing.T) {
	tables := []string{"shop.orders", "shop.lines"}
	for _, c := range []struct {
		txn  string
		want string
	}{
		{"p.transaction", ""},
		{"p.shop.orders", "shop.orders"},
		{"p.shop.line", ""},
		{"q.shop.orders", ""}, // another prefix
	} {
		got := TransactionTopicCollision(c.txn, "p", tables)
		if (c.want == "") != (got == "") || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("transaction topic %s: %q, want it to name %q", c.txn, got, c.want)
		}
	}
}
