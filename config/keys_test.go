package config

import (
	"slices"
	"testing"
)

func TestSourceKeysLoad(t *testing.T) {
	cases := []struct {
		why  string
		keys string
	}{
		{"the SPEC's spelling: a dotted table name as a flow-map key", `keys: {legacy.audit_log: [request_id, seq]}`},
		{"the same as a block map", "keys:\n    legacy.audit_log: [request_id, seq]"},
		{"nested by database: koanf's own reading of the dotted key, accepted alike", "keys:\n    legacy:\n      audit_log: [request_id, seq]"},
	}
	for _, c := range cases {
		body := `
source:
  dsn: "repl:x@tcp(127.0.0.1:3306)/"
  server_id: 4242
  tables: [legacy.audit_log, shop.orders]
  ` + c.keys + `
kafka:
  brokers: [127.0.0.1:9092]
`
		cfg, err := Load(writeConfig(t, body), nil)
		if err != nil {
			t.Errorf("%s: %v", c.why, err)
			continue
		}
		if got := cfg.Source.KeyOf("legacy", "audit_log"); !slices.Equal(got, []string{"request_id", "seq"}) {
			t.Errorf("%s: KeyOf(legacy, audit_log) = %v (keys %v)", c.why, got, cfg.Source.Keys)
		}
		if got := cfg.Source.KeyOf("shop", "orders"); got != nil {
			t.Errorf("%s: KeyOf(shop, orders) = %v, want nil (keyed by its primary key)", c.why, got)
		}
	}
}

func TestSourceKeysErrors(t *testing.T) {
	head := `
source:
  dsn: "repl:x@tcp(127.0.0.1:3306)/"
  server_id: 4242
  tables: [legacy.audit_log]
  exclude_columns: [legacy.audit_log.secret]
`
	const tail = "kafka:\n  brokers: [127.0.0.1:9092]\n"
	expectLoadErrors(t, []loadError{
		{why: "a table that is not captured has no events to key",
			body: head + "  keys: {legacy.other: [id]}\n" + tail,
			want: []string{"source.keys.legacy.other", "not in source.tables", "add it there"}},
		{why: "an empty column list keys nothing",
			body: head + "  keys: {legacy.audit_log: []}\n" + tail,
			want: []string{"source.keys.legacy.audit_log is empty", "UNIQUE NOT NULL"}},
		{why: "a column named twice is a typo that would make a key of the wrong width",
			body: head + "  keys: {legacy.audit_log: [request_id, seq, REQUEST_ID]}\n" + tail,
			want: []string{"source.keys.legacy.audit_log lists column REQUEST_ID twice"}},
		{why: "a key column is in every event, so it cannot also be excluded",
			body: head + "  keys: {legacy.audit_log: [request_id, secret]}\n" + tail,
			want: []string{"source.keys.legacy.audit_log: column secret is also in source.exclude_columns"}},
		{why: "a name without a database cannot be a captured table",
			body: head + "  keys: {audit_log: [id]}\n" + tail,
			want: []string{"source.keys.audit_log: want db.table"}},
		{why: "every problem is reported at once",
			body: head + "  keys: {legacy.other: [id], legacy.audit_log: []}\n" + tail,
			want: []string{"source.keys.legacy.other", "source.keys.legacy.audit_log is empty"}},
	})
}
