package sqlflavor

import (
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"
)

func row(vals ...any) []sql.NullString {
	out := make([]sql.NullString, len(vals))
	for i, v := range vals {
		if s, ok := v.(string); ok {
			out[i] = sql.NullString{String: s, Valid: true}
		}
	}
	return out
}

func TestParseBinlogStatus(t *testing.T) {
	for _, c := range []struct {
		why  string
		r    Result
		want BinlogStatus
		err  string
	}{
		{"MySQL: the GTID set's line breaks after commas are dropped",
			Result{[]string{"File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB", "Executed_Gtid_Set"}, [][]sql.NullString{row("binlog.000002", "1307", "", "", "a:1-5,\nb:1-3")}},
			BinlogStatus{"binlog.000002", 1307, "a:1-5,b:1-3"}, ""},
		{"MariaDB: no GTID column (the GTID position is a variable)",
			Result{[]string{"File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB"}, [][]sql.NullString{row("mariadb-bin.000016", "475", "", "")}},
			BinlogStatus{"mariadb-bin.000016", 475, ""}, ""},
		{"no row: binary logging is off", Result{[]string{"File", "Position"}, nil}, BinlogStatus{}, ErrBinlogOff.Error()},
		{"an answer without Position is refused, not read by position", Result{[]string{"File", "Pos"}, [][]sql.NullString{row("f", "4")}}, BinlogStatus{}, "no File/Position"},
	} {
		got, err := ParseBinlogStatus(c.r)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.why, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %+v %v, want %+v", c.why, got, err, c.want)
		}
	}
}

func TestParseReplicaLag(t *testing.T) {
	for _, c := range []struct {
		why       string
		r         Result
		lag       time.Duration
		isReplica bool
		err       error
	}{
		{"MySQL >= 8.0.22 names the column Seconds_Behind_Source", Result{[]string{"Replica_IO_State", "Seconds_Behind_Source"}, [][]sql.NullString{row("", "7")}}, 7 * time.Second, true, nil},
		{"MariaDB and older MySQL: Seconds_Behind_Master", Result{[]string{"Slave_IO_State", "Seconds_Behind_Master"}, [][]sql.NullString{row("", "0")}}, 0, true, nil},
		{"no row: not a replica", Result{[]string{"Seconds_Behind_Source"}, nil}, 0, false, nil},
		{"NULL lag: replication stopped", Result{[]string{"Seconds_Behind_Source"}, [][]sql.NullString{row(nil)}}, 0, true, ErrReplicationStopped},
	} {
		lag, ok, err := ParseReplicaLag(c.r)
		if lag != c.lag || ok != c.isReplica || !errors.Is(err, c.err) {
			t.Errorf("%s: %s %v %v, want %s %v %v", c.why, lag, ok, err, c.lag, c.isReplica, c.err)
		}
	}
}
