package sourcedb

import (
	"strings"
	"testing"
)

func TestDriverConfig(t *testing.T) {
	for _, c := range []struct {
		why    string
		dsn    string
		o      Options
		params map[string]string // wanted, "" meaning absent
		interp bool
	}{
		{"every reader gets UTC and MySQL's default sql_mode over the DSN's own, and no default database",
			"u:p@tcp(h:3306)/shop?time_zone=%27SYSTEM%27&sql_mode=%27ANSI_QUOTES%27", Options{},
			map[string]string{"time_zone": "'+00:00'", "sql_mode": "'NO_ENGINE_SUBSTITUTION'", "group_concat_max_len": ""}, false},
		{"verify's children arrays need group_concat_max_len raised",
			"u:p@tcp(h:3306)/", Options{GroupConcatMax: 1 << 30},
			map[string]string{"group_concat_max_len": "1073741824"}, false},
		{"the shard-key report reads MySQL's text of every value: the text protocol",
			"u:p@tcp(h:3306)/", Options{TextProtocol: true}, nil, true},
		{"a DSN's own interpolateParams is kept when the reader does not ask for it",
			"u:p@tcp(h:3306)/?interpolateParams=true", Options{}, nil, true},
	} {
		cfg, err := driverConfig(c.dsn, c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.why, err)
		}
		if cfg.DBName != "" {
			t.Errorf("%s: DBName %q, want none", c.why, cfg.DBName)
		}
		for k, want := range c.params {
			if got := cfg.Params[k]; got != want {
				t.Errorf("%s: %s = %q, want %q", c.why, k, got, want)
			}
		}
		if cfg.InterpolateParams != c.interp {
			t.Errorf("%s: interpolateParams %v, want %v", c.why, cfg.InterpolateParams, c.interp)
		}
	}
}

// TestBadDSN: a DSN the driver cannot read is named as the source's.
func TestBadDSN(t *testing.T) {
	if _, err := Open("not a dsn", Options{}); err == nil || !strings.Contains(err.Error(), "source DSN") {
		t.Errorf("err = %v, want it to name the source DSN", err)
	}
}
