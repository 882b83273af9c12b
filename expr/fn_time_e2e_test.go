package expr_test

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// timeCols are the source columns of the time matrix: every temporal
// type and a string holding dates.
var timeCols = []diffCol{{"d", "DATE NULL"}, {"dt", "DATETIME(6) NULL"}, {"dt0", "DATETIME NULL"}, {"dt3", "DATETIME(3) NULL"},
	{"ts", "TIMESTAMP(6) NULL"}, {"ts0", "TIMESTAMP NULL"}, {"tm", "TIME(2) NULL"}, {"s", "VARCHAR(40) CHARACTER SET utf8mb4 NULL"}}

// timeMatrix is the generated input: every day of 1999–2005 (2000 and
// 2004 leap, 1900 and 2100 not) at varied times of day, the turn of every
// year 1900–2100 (week numbering across years), January 1st of every 7th
// year 1000–9999, the DST transitions of Europe/Berlin and America/
// New_York in 2021, 12-hour clock edges, fraction edges, the extremes of
// DATETIME and TIMESTAMP, zero dates and zero-in-date values.
func timeMatrix() []string {
	var out []string
	day := func(t time.Time, i int) string {
		return fmt.Sprintf("%s.%06d", t.Add(time.Duration(i%24)*time.Hour+time.Duration(i*7%60)*time.Minute+time.Duration(i*13%60)*time.Second).Format("2006-01-02 15:04:05"), i*123457%1000000)
	}
	for t, i := time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC), 0; t.Year() < 2006; t, i = t.AddDate(0, 0, 1), i+1 {
		out = append(out, day(t, i))
	}
	for y := 1900; y <= 2100; y++ {
		for t := time.Date(y, 12, 25, 0, 0, 0, 0, time.UTC); t.Before(time.Date(y+1, 1, 8, 0, 0, 0, 0, time.UTC)); t = t.AddDate(0, 0, 1) {
			if y < 1999 || y > 2005 {
				out = append(out, day(t, t.YearDay()+y))
			}
		}
	}
	for y := 1000; y <= 9999; y += 7 {
		out = append(out, fmt.Sprintf("%04d-01-01 00:00:00.000000", y))
	}
	for _, dst := range []string{"2021-03-28", "2021-10-31", "2021-03-14", "2021-11-07"} {
		for m := 0; m <= 10*60; m += 30 {
			t, _ := time.Parse("2006-01-02", dst)
			out = append(out, t.Add(time.Duration(m)*time.Minute).Format("2006-01-02 15:04:05.000000"))
		}
	}
	for _, hm := range []string{"00:00:00", "00:59:59", "01:00:00", "11:59:59", "12:00:00", "12:59:59", "13:00:00", "23:59:59"} {
		out = append(out, "2020-02-29 "+hm+".000000")
	}
	return append(out,
		"2020-01-01 00:00:00.000001", "2020-12-31 23:59:59.999999", "2020-06-15 12:30:30.500000",
		"1000-01-01 00:00:00.000000", "9999-12-31 23:59:59.999999", "1000-01-01 23:59:59.999999",
		"1969-12-31 23:59:59.999999", "1970-01-01 00:00:00.000000", "1970-01-01 00:00:01.000000",
		"2038-01-19 03:14:07.999999", "2038-01-19 03:14:08.000000", "2106-02-07 06:28:15.000000",
		"0000-00-00 00:00:00.000000", "0000-01-01 00:00:00.000000", "0000-12-31 10:00:00.000000", "0001-01-01 00:00:00.000000",
		"0000-00-05 00:00:00.000000", "2020-00-15 10:00:00.000000", "2020-02-00 13:00:00.000000", "2020-00-00 23:00:00.000000",
		"2000-00-01 00:00:00.000000", "2004-01-00 00:00:00.000000", "1999-12-00 00:00:00.000000",
	)
}

// timeStrings are strings whose date MySQL refuses (NULL) although they
// are spelled canonically.
var timeStrings = []string{"2020-02-30", "2021-02-29", "2020-13-01", "2020-01-01 24:00:00", "2020-01-01 10:60:00", "2020-01-32 00:00:00.5"}

// timeExprs are the expressions of the time matrix.
func timeExprs() []string {
	var out []string
	for _, c := range []string{"d", "dt", "dt0", "dt3", "ts", "ts0", "s"} {
		for _, f := range []string{"DATE", "YEAR", "MONTH", "DAY", "DAYOFMONTH", "UNIX_TIMESTAMP"} {
			out = append(out, f+"("+c+")")
		}
		if c != "s" {
			out = append(out, "HOUR("+c+")")
		}
		for _, u := range []string{"hour", "day", "week", "month", "year"} {
			out = append(out, "bucket("+c+", '"+u+"')")
		}
	}
	out = append(out, "HOUR(tm)")
	// Every specifier MySQL documents, one per expression so that a NULL
	// from one does not hide the others, plus all of them together,
	// literal text, %% and an unknown specifier.
	for _, c := range []string{"d", "dt", "dt3", "ts", "s"} {
		for _, spec := range "abcDdefHhIijklMmprSsTUuVvWwXxYy%Q" {
			out = append(out, "DATE_FORMAT("+c+", '%"+string(spec)+"')")
		}
		out = append(out, "DATE_FORMAT("+c+", '%Y-%m-%d %H:%i:%s.%f %p %r %T %X-%V %x-%v %U %u %D %j %W %M %%')",
			"DATE_FORMAT("+c+", 'week %v of %x, 100%')")
	}
	return out
}

// TestTimeFunctionsDifferential evaluates every time function over the
// matrix in Go and on MariaDB, first with the server's global time zone
// SYSTEM (US/Samoa), then Europe/Berlin (with DST), each through a
// session at '+00:00' as verify and the rebuild run: the results must be
// the same, byte for byte, whatever the server's own zone.
func TestTimeFunctionsDifferential(t *testing.T) {
	if server == nil {
		t.Skip("e2e: needs MariaDB; run `make e2e` (or set E2E=1)")
	}
	q := func(s string) string { return "'" + s + "'" }
	var rows [][]string
	for i, v := range timeMatrix() {
		ts := "NULL"
		inRange := v >= "1970-01-01 00:00:01" && v <= "2038-01-19 03:14:07.999999" && v[5:7] != "00" && v[8:10] != "00"
		if inRange || strings.HasPrefix(v, "0000-00-00 ") {
			ts = q(v)
		}
		s := v
		if i%2 == 0 {
			s = v[:10]
		} else if i%3 == 0 {
			s = v[:19]
		}
		rows = append(rows, []string{q(v[:10]), q(v), q(v), q(v), ts, ts, q(fmt.Sprintf("%d:%s", i%839-419, v[14:22])), q(s)})
	}
	for _, s := range timeStrings {
		rows = append(rows, []string{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "'-838:59:59.99'", q(s)})
	}
	rows = append(rows, []string{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "'838:59:59'", "NULL"},
		[]string{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"})
	m := newMatrix(t, timeCols, rows)
	t.Logf("%d rows, %d expressions", len(rows), len(timeExprs()))

	t.Run("global time zone SYSTEM (US/Samoa)", func(t *testing.T) {
		m.compare(t, nil, timeExprs(), true)
	})
	t.Run("global time zone Europe/Berlin", func(t *testing.T) {
		ctx := t.Context()
		loadZone(t, "Europe/Berlin")
		if _, err := server.DB().ExecContext(ctx, "SET GLOBAL time_zone = 'Europe/Berlin'"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = server.Exec(context.Background(), "SET GLOBAL time_zone = 'SYSTEM'") })
		// A pool of its own: the test bed's pool keeps sessions opened
		// before the change, with the old zone.
		db, err := sql.Open("mysql", server.AdminDSN())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var global, sess string
		if err := conn.QueryRowContext(ctx, "SELECT @@global.time_zone, @@session.time_zone").Scan(&global, &sess); err != nil || global != "Europe/Berlin" || sess != "Europe/Berlin" {
			t.Fatalf("a new session's time zones are %q and %q (%v), want Europe/Berlin", global, sess, err)
		}
		for _, s := range []string{"USE `" + m.db + "`", "SET time_zone = '+00:00'", "SET NAMES utf8mb4 COLLATE utf8mb4_general_ci"} {
			mustExec(t, conn, s)
		}
		// The types do not depend on the zone: the first run checked them.
		m.compare(t, conn, timeExprs(), false)
	})
}

// loadZone loads one zone's rules into the server's time zone tables.
func loadZone(t *testing.T, zone string) {
	t.Helper()
	// A test bed kept between runs (testbed up) has it from the first
	// run: loading it again fails on its names' primary key.
	var loaded int
	if err := server.DB().QueryRowContext(t.Context(), "SELECT COUNT(*) FROM mysql.time_zone_name WHERE Name = ?", zone).Scan(&loaded); err != nil {
		t.Fatal(err)
	}
	if loaded > 0 {
		return
	}
	out, err := exec.CommandContext(t.Context(), "mariadb-tzinfo-to-sql", "/usr/share/zoneinfo/"+zone, zone).Output()
	if err != nil {
		t.Fatalf("mariadb-tzinfo-to-sql %s: %v", zone, err)
	}
	db, err := sql.Open("mysql", server.AdminDSN()+"mysql?multiStatements=true")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), string(out)); err != nil {
		t.Fatalf("loading %s: %v", zone, err)
	}
}
