package expr

import (
	"strconv"
	"strings"
)

// DATE_FORMAT's specifiers, in the server's en_US locale (lc_time_names'
// default; readside's sessions do not change it).

var (
	monthNames   = [...]string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	monthAbbrevs = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
	dayNames     = [...]string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	dayAbbrevs   = [...]string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
)

// formatLength is the length in characters of a DATE_FORMAT result of
// this format: the read column's varchar length. It is the server's own
// (format_length: month and day names count 64, their abbreviations 32,
// for any locale) except for the week specifiers, which it sizes for
// sensible dates only: for a zero date or a zero in the date the server's
// unsigned arithmetic gives up to 10 digits ('0000-00-00' has %X
// 4294967295, '2020-00-15' has %U 613566754), which a column of the
// server's own type for the expression would refuse.
func formatLength(format string) int {
	size := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i == len(format)-1 {
			size++
			continue
		}
		i++
		switch format[i] {
		case 'M', 'W':
			size += 64
		case 'D', 'Y':
			size += 4
		case 'x', 'X', 'U', 'u', 'V', 'v':
			size += 10
		case 'a', 'b':
			size += 32
		case 'j':
			size += 3
		case 'y', 'm', 'd', 'h', 'I', 'i', 'l', 'p', 'S', 's', 'c', 'e':
			size += 2
		case 'k', 'H':
			size += 7
		case 'r':
			size += 11
		case 'T':
			size += 8
		case 'f':
			size += 6
		default:
			size++
		}
	}
	return size
}

// numericSpecs are the specifiers that print one number, zero-padded to
// a width.
var numericSpecs = [256]struct {
	part  func(t mysqlTime) uint64
	width int
}{
	'Y': {func(t mysqlTime) uint64 { return uint64(t.year) }, 4},
	'y': {func(t mysqlTime) uint64 { return uint64(t.year % 100) }, 2},
	'm': {func(t mysqlTime) uint64 { return uint64(t.month) }, 2},
	'c': {func(t mysqlTime) uint64 { return uint64(t.month) }, 1},
	'd': {func(t mysqlTime) uint64 { return uint64(t.day) }, 2},
	'e': {func(t mysqlTime) uint64 { return uint64(t.day) }, 1},
	'f': {func(t mysqlTime) uint64 { return uint64(t.micro) }, 6},
	'H': {func(t mysqlTime) uint64 { return uint64(t.hour) }, 2},
	'k': {func(t mysqlTime) uint64 { return uint64(t.hour) }, 1},
	'h': {hour12, 2},
	'I': {hour12, 2},
	'l': {hour12, 1},
	'i': {func(t mysqlTime) uint64 { return uint64(t.minute) }, 2},
	'S': {func(t mysqlTime) uint64 { return uint64(t.second) }, 2},
	's': {func(t mysqlTime) uint64 { return uint64(t.second) }, 2},
	'U': {weekPart(weekFirstWeekday, false), 2},
	'u': {weekPart(weekMondayFirst, false), 2},
	'V': {weekPart(weekYear|weekFirstWeekday, false), 2},
	'v': {weekPart(weekYear|weekMondayFirst, false), 2},
	'X': {weekPart(weekYear|weekFirstWeekday, true), 4},
	'x': {weekPart(weekYear|weekMondayFirst, true), 4},
}

func hour12(t mysqlTime) uint64 { return uint64((t.hour%24+11)%12 + 1) }

// weekPart gives the week number, or with year the year it belongs to,
// under a calc_week mode.
func weekPart(mode int, year bool) func(t mysqlTime) uint64 {
	return func(t mysqlTime) uint64 {
		w, y := week(t, mode)
		if year {
			return uint64(y)
		}
		return uint64(w)
	}
}

// dateFormat is DATE_FORMAT(t, format); ok is false where the server
// gives NULL: a month name of month 0, a weekday of a date with neither
// month nor year, a day of the year without month or year.
func dateFormat(t mysqlTime, format string) (string, bool) {
	var b strings.Builder
	b.Grow(len(format) + 16)
	pad := func(n uint64, width int) {
		s := strconv.FormatUint(n, 10)
		for i := len(s); i < width; i++ {
			b.WriteByte('0')
		}
		b.WriteString(s)
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i == len(format)-1 {
			b.WriteByte(c)
			continue
		}
		i++
		if spec := numericSpecs[format[i]]; spec.part != nil {
			pad(spec.part(t), spec.width)
			continue
		}
		switch format[i] {
		case 'M':
			if t.month == 0 {
				return "", false
			}
			b.WriteString(monthNames[t.month-1])
		case 'b':
			if t.month == 0 {
				return "", false
			}
			b.WriteString(monthAbbrevs[t.month-1])
		case 'W', 'a', 'w':
			if t.month == 0 && t.year == 0 {
				return "", false
			}
			switch format[i] {
			case 'W':
				b.WriteString(dayNames[weekday(dayNumber(t.year, t.month, t.day), false)])
			case 'a':
				b.WriteString(dayAbbrevs[weekday(dayNumber(t.year, t.month, t.day), false)])
			default:
				pad(uint64(weekday(dayNumber(t.year, t.month, t.day), true)), 1)
			}
		case 'D':
			pad(uint64(t.day), 1)
			b.WriteString(ordinalSuffix(t.day))
		case 'j':
			if t.month == 0 || t.year == 0 {
				return "", false
			}
			pad(uint64(dayNumber(t.year, t.month, t.day)-dayNumber(t.year, 1, 1)+1), 3)
		case 'p':
			b.WriteString(ampm(t.hour))
		case 'r':
			pad(uint64((t.hour+11)%12+1), 2)
			b.WriteByte(':')
			pad(uint64(t.minute), 2)
			b.WriteByte(':')
			pad(uint64(t.second), 2)
			b.WriteByte(' ')
			b.WriteString(ampm(t.hour))
		case 'T':
			pad(uint64(t.hour), 2)
			b.WriteByte(':')
			pad(uint64(t.minute), 2)
			b.WriteByte(':')
			pad(uint64(t.second), 2)
		default:
			// %% and unknown specifiers give the character itself.
			b.WriteByte(format[i])
		}
	}
	return b.String(), true
}

func ordinalSuffix(day int) string {
	if day >= 10 && day <= 19 {
		return "th"
	}
	switch day % 10 {
	case 1:
		return "st"
	case 2:
		return "nd"
	case 3:
		return "rd"
	}
	return "th"
}

func ampm(hour int) string {
	if hour%24 < 12 {
		return "AM"
	}
	return "PM"
}
