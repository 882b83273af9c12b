package debezium

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/readside/readside/config"
)

// appendValue appends raw, readside's JSON encoding of one value of f
// (docs/events.md, "Values"), as Debezium encodes it.
// snapshot says the value was read by a snapshot, where Debezium writes
// some values differently from the binlog's (zonedTimestamp).
func (f *field) appendValue(buf []byte, raw []byte, m *config.Debezium, snapshot bool) ([]byte, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return append(buf, "null"...), nil
	}
	switch f.kind {
	case kNumber, kString:
		return append(buf, raw...), nil
	case kUnsigned, kDecimal, kBool, kBits:
		return f.appendNumber(buf, raw, m)
	case kDate, kDatetime, kTimestamp:
		return f.appendDatetime(buf, raw, snapshot)
	case kTime:
		return f.appendTime(buf, raw)
	case kBinary:
		return f.appendBinary(buf, raw, m)
	}
	return nil, f.bad(raw, fmt.Errorf("no encoding for kind %d", f.kind))
}

// appendNumber: BIGINT UNSIGNED, DECIMAL and BIT under their modes.
func (f *field) appendNumber(buf []byte, raw []byte, m *config.Debezium) ([]byte, error) {
	switch f.kind {
	case kUnsigned:
		u, err := strconv.ParseUint(string(raw), 10, 64)
		if err != nil {
			return nil, f.bad(raw, err)
		}
		if m.Bigint.Unsigned.Handling.Mode == config.UnsignedPrecise {
			return appendBase64(buf, twosComplement(new(big.Int).SetUint64(u))), nil
		}
		// long: Debezium reads the 64 bits as a Java long, so 2^63 and
		// above wrap negative.
		return strconv.AppendInt(buf, int64(u), 10), nil
	case kDecimal:
		s, err := unquote(raw)
		if err != nil {
			return nil, f.bad(raw, err)
		}
		switch m.Decimal.Handling.Mode {
		case config.DecimalString:
			return appendString(buf, s), nil
		case config.DecimalDouble:
			d, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, f.bad(raw, err)
			}
			return strconv.AppendFloat(buf, d, 'g', -1, 64), nil
		}
		unscaled, ok := new(big.Int).SetString(strings.Replace(s, ".", "", 1), 10)
		if !ok || fractionDigits(s) != f.digits {
			return nil, f.bad(raw, fmt.Errorf("not a decimal of scale %d", f.digits))
		}
		return appendBase64(buf, twosComplement(unscaled)), nil
	}
	u, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return nil, f.bad(raw, err)
	}
	if f.kind == kBool {
		return strconv.AppendBool(buf, u != 0), nil
	}
	var le [8]byte
	binary.LittleEndian.PutUint64(le[:], u)
	return appendBase64(buf, le[:(f.bits+7)/8]), nil
}

// appendDatetime: DATE and DATETIME as numbers under time.precision.mode,
// TIMESTAMP as Debezium's ZonedTimestamp string.
func (f *field) appendDatetime(buf []byte, raw []byte, snapshot bool) ([]byte, error) {
	s, err := unquote(raw)
	if err != nil {
		return nil, f.bad(raw, err)
	}
	t, zero, err := parseDatetime(s)
	if err != nil {
		return nil, f.bad(raw, err)
	}
	switch {
	case zero && f.kind == kTimestamp:
		// The zero TIMESTAMP is stored as second 0 of the epoch, and
		// Debezium writes that instant.
		return appendString(buf, "1970-01-01T00:00:00Z"), nil
	case zero && f.optional:
		// A zero date names no day: Debezium writes null, or the
		// epoch where the column is NOT NULL.
		return append(buf, "null"...), nil
	case zero:
		return append(buf, '0'), nil
	case f.kind == kTimestamp:
		return appendString(buf, zonedTimestamp(t, f.digits, snapshot)), nil
	case f.kind == kDate:
		return strconv.AppendInt(buf, floorDiv(t.Unix(), 86400), 10), nil
	case f.micro:
		return strconv.AppendInt(buf, t.UnixMicro(), 10), nil
	}
	return strconv.AppendInt(buf, t.UnixMilli(), 10), nil
}

// appendTime: TIME as microseconds (negative and over a day kept), or as
// Kafka Connect's time of day in milliseconds.
func (f *field) appendTime(buf []byte, raw []byte) ([]byte, error) {
	s, err := unquote(raw)
	if err != nil {
		return nil, f.bad(raw, err)
	}
	us, err := parseTime(s)
	if err != nil {
		return nil, f.bad(raw, err)
	}
	if !f.micro {
		if !timeOfDay(us) {
			return append(buf, "null"...), nil
		}
		return strconv.AppendInt(buf, us/1000, 10), nil
	}
	return strconv.AppendInt(buf, us, 10), nil
}

// timeOfDay reports a TIME of us microseconds that Kafka Connect's Time
// (a time of day) holds as Debezium writes it: 00:00:00 to 24:00:00
// (86,400,000 ms); Debezium writes null for the others.
func timeOfDay(us int64) bool {
	return us >= 0 && us <= 24*3600*1e6
}

// appendBinary: bytes under binary.handling.mode.
func (f *field) appendBinary(buf []byte, raw []byte, m *config.Debezium) ([]byte, error) {
	if m.Binary.Handling.Mode == config.BinaryBytes || m.Binary.Handling.Mode == config.BinaryBase64 {
		return append(buf, raw...), nil // readside's base64 is the JSON converter's
	}
	s, err := unquote(raw)
	if err != nil {
		return nil, f.bad(raw, err)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, f.bad(raw, err)
	}
	if m.Binary.Handling.Mode == config.BinaryHex {
		return appendString(buf, hex.EncodeToString(b)), nil
	}
	return appendString(buf, base64.URLEncoding.EncodeToString(b)), nil
}

func (f *field) bad(raw []byte, err error) error {
	return fmt.Errorf("column %s: value %s: %w", f.name, raw, err)
}

// twosComplement is n's big-endian two's complement in the fewest bytes,
// what Java's BigInteger.toByteArray gives Kafka Connect's Decimal.
func twosComplement(n *big.Int) []byte {
	if n.Sign() >= 0 {
		b := n.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -n - 1 has the complement's bits inverted.
	m := new(big.Int).Neg(n)
	m.Sub(m, big.NewInt(1))
	b := m.Bytes()
	for i := range b {
		b[i] = ^b[i]
	}
	if len(b) == 0 || b[0]&0x80 == 0 {
		b = append([]byte{0xff}, b...)
	}
	return b
}

func fractionDigits(s string) int {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return len(s) - i - 1
	}
	return 0
}

// parseDatetime reads readside's DATE, DATETIME and TIMESTAMP text
// ("2024-02-29", "2024-02-29 13:14:15.123456"), as UTC. A two-digit year
// (0-99) is read as Debezium's time adjuster does by default: 00-69 as
// 2000-2069, 70-99 as 1970-1999. zero reports a date with a zero part
// ("0000-00-00"), which names no day.
func parseDatetime(s string) (t time.Time, zero bool, err error) {
	date, clock, _ := strings.Cut(s, " ")
	ymd := strings.Split(date, "-")
	if len(ymd) != 3 {
		return t, false, fmt.Errorf("not a date")
	}
	var p [3]int
	for i, v := range ymd {
		if p[i], err = strconv.Atoi(v); err != nil {
			return t, false, fmt.Errorf("not a date")
		}
	}
	if p[0] == 0 && p[1] == 0 && p[2] == 0 || p[1] == 0 || p[2] == 0 {
		return t, true, nil
	}
	switch {
	case p[0] < 70:
		p[0] += 2000
	case p[0] < 100:
		p[0] += 1900
	}
	var us int64
	if clock != "" {
		if us, err = parseTime(clock); err != nil {
			return t, false, err
		}
	}
	t = time.Date(p[0], time.Month(p[1]), p[2], 0, 0, 0, 0, time.UTC).Add(time.Duration(us) * time.Microsecond)
	return t, false, nil
}

// parseTime reads "[-]h:mm:ss[.ffffff]" as microseconds, sign kept.
func parseTime(s string) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	hms := strings.Split(whole, ":")
	if len(hms) != 3 || len(frac) > 6 {
		return 0, fmt.Errorf("not a time")
	}
	var us int64
	for _, v := range hms {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("not a time")
		}
		us = us*60 + n
	}
	us *= 1e6
	if frac != "" {
		n, err := strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("not a time")
		}
		us += n
	}
	if neg {
		us = -us
	}
	return us, nil
}

// zonedTimestamp is Debezium's ZonedTimestamp text of an instant: ISO 8601
// in UTC ending in Z. A binlog value has the column's fractional digits;
// a snapshot's has them without trailing zeros (.100 is .1, .000 none),
// as Debezium's connector writes them (it reads the two through different
// paths).
func zonedTimestamp(t time.Time, digits int, snapshot bool) string {
	s := t.Format("2006-01-02T15:04:05")
	frac := fmt.Sprintf("%06d", t.Nanosecond()/1000)[:min(digits, 6)]
	if snapshot {
		frac = strings.TrimRight(frac, "0")
	}
	if frac != "" {
		s += "." + frac
	}
	return s + "Z"
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func unquote(raw []byte) (string, error) {
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

func appendString(buf []byte, s string) []byte {
	b, _ := json.Marshal(s)
	return append(buf, b...)
}

func appendBase64(buf, b []byte) []byte {
	buf = append(buf, '"')
	buf = base64.StdEncoding.AppendEncode(buf, b)
	return append(buf, '"')
}
