package expr

import (
	"fmt"
	"strconv"
	"strings"
)

// Temporal values as the events carry them (docs/events.md "Values"):
// DATE "YYYY-MM-DD", DATETIME and TIMESTAMP "YYYY-MM-DD HH:MM:SS[.f]"
// (TIMESTAMP in UTC: the sessions that compute the same in SQL run with
// time_zone '+00:00'), TIME "[-]HHH:MM:SS[.f]".

// parseDatetime reads a date or datetime the way MySQL reads one from a
// string: YYYY-MM-DD[( |T)HH:MM:SS[.ffffff]] with one- or two-digit
// parts, or the digits alone (YYYYMMDD[HHMMSS]). It gives the parts and
// the fraction digits written.
func parseDatetime(s string) (p [7]int, frac int, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return p, 0, false
	}
	if isDigits(s) && (len(s) == 8 || len(s) == 14) {
		p[0], _ = strconv.Atoi(s[0:4])
		p[1], _ = strconv.Atoi(s[4:6])
		p[2], _ = strconv.Atoi(s[6:8])
		if len(s) == 14 {
			p[3], _ = strconv.Atoi(s[8:10])
			p[4], _ = strconv.Atoi(s[10:12])
			p[5], _ = strconv.Atoi(s[12:14])
		}
		return p, 0, validDate(p)
	}
	datePart, timePart, hasTime := strings.Cut(s, " ")
	if !hasTime {
		datePart, timePart, hasTime = strings.Cut(s, "T")
	}
	ymd := strings.Split(datePart, "-")
	if len(ymd) != 3 {
		return p, 0, false
	}
	for i, f := range ymd {
		if f == "" || !isDigits(f) || len(f) > 4 || i > 0 && len(f) > 2 {
			return p, 0, false
		}
		p[i], _ = strconv.Atoi(f)
	}
	if len(ymd[0]) <= 2 { // two-digit years: 70-99 → 19xx, 00-69 → 20xx
		if p[0] < 70 {
			p[0] += 2000
		} else {
			p[0] += 1900
		}
	}
	if hasTime {
		timePart = strings.TrimSpace(timePart)
		whole, f, hasFrac := strings.Cut(timePart, ".")
		hms := strings.Split(whole, ":")
		if len(hms) != 3 {
			return p, 0, false
		}
		for i, x := range hms {
			if x == "" || !isDigits(x) || len(x) > 2 {
				return p, 0, false
			}
			p[3+i], _ = strconv.Atoi(x)
		}
		if hasFrac {
			if f == "" || !isDigits(f) {
				return p, 0, false
			}
			frac = len(f)
			f = (f + "000000")[:6]
			p[6], _ = strconv.Atoi(f)
		}
		if p[3] > 23 || p[4] > 59 || p[5] > 59 {
			return p, 0, false
		}
	}
	return p, frac, validDate(p)
}

// validDate accepts what a DATE column accepts under the default sql_mode
// (zero dates and zero parts included, as the server's comparisons do).
func validDate(p [7]int) bool {
	if p[0] > 9999 || p[1] > 12 || p[2] > 31 {
		return false
	}
	if p[1] == 0 || p[2] == 0 {
		return true
	}
	return p[2] <= daysIn(p[0], p[1])
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func formatDatetime(p [7]int, frac int) string {
	s := fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", p[0], p[1], p[2], p[3], p[4], p[5])
	if frac > 0 {
		s += "." + fmt.Sprintf("%06d", p[6])[:frac]
	}
	return s
}

// zeroKey is the zero datetime a string that is not a date compares as
// (MySQL warns and reads it as 0000-00-00).
const zeroKey = "0000-00-00 00:00:00.000000"

// datetimeKey is a date or datetime (or a string read as one) as text
// that sorts as the value does; ok is false when a string is not a date.
func datetimeKey(d Datum) (string, bool) {
	switch d.Kind {
	case KindDate:
		return d.S + " 00:00:00.000000", true
	case KindDatetime:
		if d.Frac == 0 {
			return d.S + ".000000", true
		}
		return (d.S + "000000")[:26], true
	}
	p, _, ok := parseDatetime(toText(d))
	if !ok {
		return "", false
	}
	return formatDatetime(p, 6), true
}

// parseTime reads [-][D ]HHH:MM:SS[.f] (also HH:MM) as microseconds.
func parseTime(s string) (int64, int, bool) {
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	days := 0
	if d, rest, ok := strings.Cut(s, " "); ok && isDigits(d) {
		days, _ = strconv.Atoi(d)
		s = rest
	}
	whole, f, hasFrac := strings.Cut(s, ".")
	parts := strings.Split(whole, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, false
	}
	var v [3]int64
	for i, x := range parts {
		if !isDigits(x) || i > 0 && len(x) > 2 {
			return 0, 0, false
		}
		v[i], _ = strconv.ParseInt(x, 10, 64)
	}
	if v[1] > 59 || v[2] > 59 {
		return 0, 0, false
	}
	us := ((int64(days)*24+v[0])*3600 + v[1]*60 + v[2]) * 1e6
	frac := 0
	if hasFrac {
		if !isDigits(f) {
			return 0, 0, false
		}
		frac = len(f)
		n, _ := strconv.ParseInt((f + "000000")[:6], 10, 64)
		us += n
	}
	if neg {
		us = -us
	}
	return us, frac, true
}

// timeMicros is a TIME (or a string read as one) in microseconds; ok is
// false when a string is not a time.
func timeMicros(d Datum) (int64, bool) {
	us, _, ok := parseTime(toText(d))
	return us, ok
}

func formatTime(us int64, frac int) string {
	sign := ""
	if us < 0 {
		sign, us = "-", -us
	}
	sec := us / 1e6
	s := fmt.Sprintf("%s%02d:%02d:%02d", sign, sec/3600, sec/60%60, sec%60)
	if frac > 0 {
		s += "." + fmt.Sprintf("%06d", us%1e6)[:frac]
	}
	return s
}
