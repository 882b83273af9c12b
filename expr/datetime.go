package expr

// The calendar arithmetic of MySQL's temporal functions. MariaDB computes
// day numbers, weekdays and week numbers with C integer types, and zero
// dates or zero-in-date values ('0000-00-00', '2020-00-15') reach that
// arithmetic unchecked: DATE_FORMAT('2020-00-15', '%U') is 613566754
// because an unsigned 32-bit day count wraps. The functions here keep the
// server's integer widths (uint32 for C's uint, uint64 for its unsigned
// long on 64-bit Linux) so such values come out the same, not just the
// sensible ones.

import (
	"fmt"
	"strconv"
)

// mysqlTime is a broken-down DATE, DATETIME or TIME value, as the server's
// MYSQL_TIME holds it: no normalization, zero parts kept.
type mysqlTime struct {
	year, month, day     int
	hour, minute, second int
	micro                int // fraction of the second in microseconds
	neg                  bool
}

// brokenDown reads a value the time functions accept: a DATE, DATETIME or
// TIMESTAMP (in UTC, as events carry it), or a string holding a date in
// canonical form. ok is false where MySQL's value is NULL: a string that is
// not a valid date (2020-02-30, 2020-13-01). A string outside the
// canonical forms is an error: MySQL's lenient parsing of other spellings
// ('20200105', '2020/1/5 3:4', trailing garbage) is not reproduced.
func brokenDown(d Datum) (t mysqlTime, ok bool, err error) {
	switch d.Kind {
	case KindDate, KindDatetime:
		t, ok = parseCanonical(d.S)
		if !ok {
			return t, false, fmt.Errorf("%s value %q is not in its canonical form", d.Kind, d.S)
		}
		return t, true, nil
	case KindString:
		t, ok = parseCanonical(d.S)
		if !ok {
			return t, false, fmt.Errorf("string %q is not a date in the form YYYY-MM-DD[ hh:mm:ss[.ffffff]]: "+
				"only these spellings are computed as MySQL does; store dates in a DATE or DATETIME column", d.S)
		}
		return t, validParts(t), nil
	}
	return t, false, fmt.Errorf("a %s is not a date", d.Kind)
}

// parseCanonical reads "YYYY-MM-DD" or "YYYY-MM-DD hh:mm:ss[.f…]" with 1 to
// 6 fraction digits.
func parseCanonical(s string) (t mysqlTime, ok bool) {
	if len(s) != 10 && (len(s) < 19 || len(s) == 20 || len(s) > 26) {
		return t, false
	}
	num := func(from, to int) int {
		n := 0
		for i := from; i < to; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				ok = false
				return 0
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	ok = s[4] == '-' && s[7] == '-'
	t.year, t.month, t.day = num(0, 4), num(5, 7), num(8, 10)
	if len(s) == 10 {
		return t, ok
	}
	ok = ok && s[10] == ' ' && s[13] == ':' && s[16] == ':'
	t.hour, t.minute, t.second = num(11, 13), num(14, 16), num(17, 19)
	if len(s) > 19 {
		ok = ok && s[19] == '.'
		t.micro = num(20, len(s))
		for i := len(s); i < 26; i++ {
			t.micro *= 10
		}
	}
	return t, ok
}

// parseTimeOfDay reads a TIME value "[-]HHH:MM:SS[.f…]".
func parseTimeOfDay(s string) (t mysqlTime, ok bool) {
	if len(s) > 0 && s[0] == '-' {
		t.neg, s = true, s[1:]
	}
	h, rest, found := cut(s, ':')
	m, rest2, found2 := cut(rest, ':')
	if !found || !found2 || len(m) != 2 || len(rest2) < 2 {
		return t, false
	}
	sec, frac, _ := cut(rest2, '.')
	var err1, err2, err3 error
	t.hour, err1 = strconv.Atoi(h)
	t.minute, err2 = strconv.Atoi(m)
	t.second, err3 = strconv.Atoi(sec)
	if err1 != nil || err2 != nil || err3 != nil || len(sec) != 2 || len(frac) > 6 {
		return t, false
	}
	for i := 0; i < 6; i++ {
		t.micro *= 10
		if i < len(frac) {
			if frac[i] < '0' || frac[i] > '9' {
				return t, false
			}
			t.micro += int(frac[i] - '0')
		}
	}
	return t, true
}

func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// validParts is what a string must satisfy to be a date for the server
// (sql_mode without NO_ZERO_DATE and NO_ZERO_IN_DATE, its default): parts
// in range, and a day that exists in its month unless the month or the
// day is zero.
func validParts(t mysqlTime) bool {
	if t.month > 12 || t.day > 31 || t.hour > 23 || t.minute > 59 || t.second > 59 {
		return false
	}
	if t.month == 0 || t.day == 0 {
		return true
	}
	return t.day <= daysInMonth(t.year, t.month)
}

func daysInMonth(year, month int) int {
	switch month {
	case 2:
		if daysInYear(uint32(year)) == 366 {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// dateText is the canonical "YYYY-MM-DD".
func (t mysqlTime) dateText() string {
	return fmt.Sprintf("%04d-%02d-%02d", t.year, t.month, t.day)
}

// dayNumber is the server's calc_daynr: days since year 0, with month 0
// and day 0 taken as they come (year 0 month 0 is day 0).
func dayNumber(year, month, day int) int64 {
	if year == 0 && month == 0 {
		return 0
	}
	y := int64(year)
	days := 365*y + 31*(int64(month)-1) + int64(day)
	if month <= 2 {
		y--
	} else {
		days -= (int64(month)*4 + 23) / 10
	}
	return days + y/4 - ((y/100+1)*3)/4
}

// weekday is the server's calc_weekday: 0 is Monday, or Sunday when
// sundayFirst.
func weekday(daynr int64, sundayFirst bool) uint32 {
	n := daynr + 5
	if sundayFirst {
		n++
	}
	return uint32(n % 7)
}

// daysInYear is the server's calc_days_in_year on an unsigned year (year
// 0 minus one wraps, as there).
func daysInYear(year uint32) uint32 {
	if year&3 == 0 && (year%100 != 0 || (year%400 == 0 && year != 0)) {
		return 366
	}
	return 365
}

// Week modes of calc_week.
const (
	weekMondayFirst  = 1
	weekYear         = 2
	weekFirstWeekday = 4
)

// week is the server's calc_week: the week number of t under mode, and the
// year it belongs to (for %X and %x).
func week(t mysqlTime, mode int) (uint32, uint32) {
	daynr := uint64(dayNumber(t.year, t.month, t.day))
	first := uint64(dayNumber(t.year, 1, 1))
	mondayFirst := mode&weekMondayFirst != 0
	useYear := mode&weekYear != 0
	firstWeekday := mode&weekFirstWeekday != 0

	wd := weekday(int64(first), !mondayFirst)
	year := uint32(t.year)
	if t.month == 1 && uint32(t.day) <= 7-wd {
		if !useYear && ((firstWeekday && wd != 0) || (!firstWeekday && wd >= 4)) {
			return 0, year
		}
		useYear = true
		year--
		n := daysInYear(year)
		first -= uint64(n)
		wd = (wd + 53*7 - n) % 7
	}
	var days uint32
	if (firstWeekday && wd != 0) || (!firstWeekday && wd >= 4) {
		days = uint32(daynr - (first + uint64(7-wd)))
	} else {
		days = uint32(daynr - (first - uint64(wd)))
	}
	if useYear && days >= 52*7 {
		wd = (wd + daysInYear(year)) % 7
		if (!firstWeekday && wd < 4) || (firstWeekday && wd == 0) {
			return 1, year + 1
		}
	}
	return days/7 + 1, year
}

// The TIMESTAMP range UNIX_TIMESTAMP answers for (MariaDB 10.11 on 64-bit
// Linux): 1970-01-01 00:00:00 to 2038-01-19 03:14:07.999999 UTC.
const maxUnixSeconds = 1<<31 - 1

var epochDay = dayNumber(1970, 1, 1)

// unixSeconds is t read as UTC in seconds since the epoch; ok is false for
// a zero date, a zero in the date, or a time outside the TIMESTAMP range,
// where UNIX_TIMESTAMP is NULL.
func unixSeconds(t mysqlTime) (int64, bool) {
	if t.month == 0 || t.day == 0 {
		return 0, false
	}
	secs := (dayNumber(t.year, t.month, t.day)-epochDay)*86400 + int64(t.hour)*3600 + int64(t.minute)*60 + int64(t.second)
	return secs, secs >= 0 && secs <= maxUnixSeconds
}
