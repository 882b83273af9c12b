package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "readside.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const minimal = `
source:
  dsn: "repl:${PW}@tcp(127.0.0.1:3306)/"
  server_id: 4242
  tables: [shop.orders, shop.customers]
kafka:
  brokers: [127.0.0.1:9092]
`

func TestLoadMinimal(t *testing.T) {
	cfg, err := Load(writeConfig(t, minimal), []string{"PW=s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Source.DSN.Reveal() != "repl:s3cret@tcp(127.0.0.1:3306)/" {
		t.Errorf("dsn = %q", cfg.Source.DSN.Reveal())
	}
	if cfg.Kafka.TopicPrefix != "readside" || cfg.Kafka.CommitInterval != 200*time.Millisecond {
		t.Errorf("defaults not applied: %+v", cfg.Kafka)
	}
	if s := cfg.Source.DSN.String(); strings.Contains(s, "s3cret") {
		t.Errorf("Secret.String leaks the password: %s", s)
	}
}

func TestEnvOverrides(t *testing.T) {
	cfg, err := Load(writeConfig(t, minimal), []string{"PW=x", "READSIDE_SOURCE__SERVER_ID=7", "READSIDE_KAFKA__BROKERS=a:1,b:2", "READSIDE_KAFKA__COMMIT_INTERVAL=1s"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Source.ServerID != 7 || len(cfg.Kafka.Brokers) != 2 || cfg.Kafka.CommitInterval != time.Second {
		t.Errorf("overrides not applied: server_id=%d brokers=%v interval=%v", cfg.Source.ServerID, cfg.Kafka.Brokers, cfg.Kafka.CommitInterval)
	}
}

// loadError is a config that must not load, and what its error says.
type loadError struct {
	why  string
	body string
	env  []string
	want []string // every fragment must appear in the error
}

// expectLoadErrors loads each case's config and checks its error.
func expectLoadErrors(t *testing.T, cases []loadError) {
	t.Helper()
	for _, c := range cases {
		_, err := Load(writeConfig(t, c.body), c.env)
		if err == nil {
			t.Errorf("%s: no error", c.why)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.why, err, w)
			}
		}
	}
}

func TestLoadErrors(t *testing.T) {
	expectLoadErrors(t, []loadError{
		{"an unset ${VAR} is named", minimal, nil, []string{"unset environment variables PW"}},
		{"unknown keys are errors", minimal + "kafak: {}\n", []string{"PW=x"}, []string{"kafak"}},
		{"every problem is reported at once",
			"source:\n  dsn: \"\"\n  server_id: 0\n  tables: [nodot]\nkafka:\n  partitions: 0\n", nil,
			[]string{"source.dsn is empty", "source.server_id is 0", `"nodot": want db.table`, "kafka.partitions must be positive"}},
		{"a bad duration names the key", minimal, []string{"PW=x", "READSIDE_SOURCE__HEARTBEAT_PERIOD=soon"}, []string{"heartbeat_period"}},
		{"the embedded broker listens on loopback only", "source:\n  dsn: \"u:p@tcp(h:1)/\"\n  server_id: 1\n  tables: [a.b]\nkafka:\n  embedded_listen: 0.0.0.0:9092\n", nil, []string{"kafka.embedded_listen", "not a loopback address"}},
		{"operations durations must be positive", minimal, []string{"PW=x", "READSIDE_SHUTDOWN_TIMEOUT=0s", "READSIDE_HTTP__READY_MAX_LAG=-1s"}, []string{"shutdown_timeout must be positive", "http.ready_max_lag must be positive"}},
		{"an unknown codec names the choices", minimal, []string{"PW=x", "READSIDE_KAFKA__COMPRESSION=lzma"}, []string{`kafka.compression "lzma": want lz4, snappy, zstd, gzip or none`}},
		{"a dotted table name is refused with why", "source:\n  dsn: \"u:p@tcp(h:1)/\"\n  server_id: 1\n  tables: [shop.a.b]\n", nil, []string{`"shop.a.b": want db.table; a database or table whose name holds a dot cannot be captured`, "RENAME TABLE"}},
		{"a duplicate table is named", "source:\n  dsn: \"u:p@tcp(h:1)/\"\n  server_id: 1\n  tables: [a.b, a.b]\n", nil, []string{`lists "a.b" twice`}},
	})
}

func TestSecretFile(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "dsn")
	if err := os.WriteFile(secret, []byte("repl:pw@tcp(h:1)/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	body := "source:\n  dsn_file: " + secret + "\n  server_id: 1\n  tables: [a.b]\n"
	if _, err := Load(writeConfig(t, body), nil); err == nil || !strings.Contains(err.Error(), "world-readable") {
		t.Errorf("world-readable secret file accepted: %v", err)
	}
	if err := os.Chmod(secret, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(writeConfig(t, body), nil)
	if err != nil || cfg.Source.DSN.Reveal() != "repl:pw@tcp(h:1)/" {
		t.Errorf("dsn_file not read: %v %q", err, cfg.Source.DSN.Reveal())
	}
}

func TestTopicPrefixMustBeAKafkaName(t *testing.T) {
	for _, bad := range []string{"", "a=b", "a b", "ä", "x/y"} {
		c := Default()
		c.Kafka.TopicPrefix = bad
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "kafka.topic_prefix") {
			t.Errorf("topic_prefix %q: %v", bad, err)
		}
	}
}

// TestLoadInvalid: a config that decodes but does not validate is an
// *Invalid holding the decoded config, so that `readside check` can go
// on listing the projections' problems; what does not decode is not.
func TestLoadInvalid(t *testing.T) {
	projections := "sinks:\n  reads:\n    dsn: \"u:p@tcp(h:1)/r\"\nprojections:\n" +
		"  a:\n    from: shop.orders\n    sink: reads\n    key: [id]\n    colums: {id: id}\n" +
		"  b:\n    from: shop.orders\n    sink: reads\n    key: [id]\n    columns: {id: id}\n    on_error: skip\n" +
		"  c:\n    from: shop.orders\n    sink: reads\n    key: [id]\n    columns: {id: id}\n"
	cases := []struct {
		why     string
		body    string
		env     []string
		invalid bool
		want    []string // each a whole problem line
		kept    []string // projections decoded
	}{
		{"an unknown projection key, another's bad mode value and Validate's problems: all listed, one per line, each by its key; the projections without one decoded",
			minimal + projections, []string{"PW=x", "READSIDE_KAFKA__PARTITIONS=0"}, true,
			[]string{
				`projections.b.on_error "skip": want dlq or stop`,
				"projections.a has unknown keys: colums: correct or remove them (docs/config.md lists every key)",
				"kafka.partitions must be positive, e.g. 6",
			}, []string{"c"}},
		{"an unknown top-level key names the config",
			minimal + "kafak: {}\n", []string{"PW=x"}, true,
			[]string{"the config has unknown keys: kafak: correct or remove them (docs/config.md lists every key)"}, nil},
		{"a value of another shape names its key, and the projection beside it decodes",
			minimal + "projections:\n  p:\n    from: shop.orders\n    columns: [id]\n  q:\n    from: shop.orders\n", []string{"PW=x"}, true,
			[]string{"projections.p.columns.0: expected type 'map[string]string', got unconvertible type 'string': give it the form docs/config.md shows"}, []string{"q"}},
		{"YAML that does not parse: no config to go on with",
			minimal + "kafka: {}\n", []string{"PW=x"}, false, nil, nil},
	}
	for _, c := range cases {
		_, err := Load(writeConfig(t, c.body), c.env)
		inv, ok := err.(*Invalid)
		if ok != c.invalid {
			t.Errorf("%s: error %T %v, want *Invalid %v", c.why, err, err, c.invalid)
			continue
		}
		if !ok {
			continue
		}
		lines := strings.Split(err.Error(), "\n")
		for _, w := range c.want {
			if !slices.Contains(lines, w) {
				t.Errorf("%s: problems\n%s\nlack the line %q", c.why, err, w)
			}
		}
		for _, name := range c.kept {
			if _, ok := inv.Config.Projections[name]; !ok {
				t.Errorf("%s: projection %s not decoded", c.why, name)
			}
		}
	}
}
