package cdc

import "testing"

func TestMySQLTxnID(t *testing.T) {
	cases := []struct {
		why  string
		gtid string
		want string
	}{
		{"with GTIDs the id is the transaction's GTID", "3e11fa47-71ca-11e1-9e33-c80aa9429562:23", "3e11fa47-71ca-11e1-9e33-c80aa9429562:23"},
		{"without GTIDs the binlog position after BEGIN names it", "", "file=binlog.000003,pos=1234"},
		{"an anonymous GTID (gtid_mode OFF) is no GTID", "00000000-0000-0000-0000-000000000000:0", "file=binlog.000003,pos=1234"},
	}
	for _, c := range cases {
		if got := mysqlTxnID(c.gtid, "binlog.000003", 1234); got != c.want {
			t.Errorf("%s: %q, want %q", c.why, got, c.want)
		}
	}
}
