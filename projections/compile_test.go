package projections

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
)

func baseConfig() config.Config {
	cfg := config.Default()
	cfg.Source.Tables = []string{"chat.messages"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{"messages_by_sender": {
		From: "chat.messages", Sink: "reads", Key: []string{"created_at", "id", "sender_id"}, ShardBy: "sender_id",
		Columns: map[string]string{"sender_id": "sender_id", "created_at": "created_at", "id": "id", "body": "body"},
	}}
	return cfg
}

func TestCompile(t *testing.T) {
	ps, err := Compile(baseConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	if got := strings.Join(p.Key, ","); got != "sender_id,created_at,id" {
		t.Errorf("key %s: the shard key must lead the primary key", got)
	}
	if p.Table != "messages_by_sender" || p.Topic != "readside.chat.messages" {
		t.Errorf("table %s topic %s", p.Table, p.Topic)
	}
	if err := p.CheckSourceKey([]string{"id"}); err != nil {
		t.Errorf("read key includes the source key: %v", err)
	}
	if err := p.CheckSourceKey([]string{"id", "tenant"}); err == nil || !strings.Contains(err.Error(), "tenant") {
		t.Errorf("a source key column missing from the read key must be named: %v", err)
	}
}

// TestApplyConcurrencyDefaults: unset, a projection applies a poll in
// DefaultApplyConcurrency transactions and an aggregate in
// DefaultAggregateApplyConcurrency (docs/config.md); a declared value wins.
func TestApplyConcurrencyDefaults(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  config.Config
		set  int
		want int
	}{
		{"copy", baseConfig(), 0, DefaultApplyConcurrency},
		{"aggregate", aggConfig(), 0, DefaultAggregateApplyConcurrency},
		{"aggregate declared", aggConfig(), 1, 1},
	} {
		for name, d := range c.cfg.Projections {
			d.ApplyConcurrency = c.set
			c.cfg.Projections[name] = d
		}
		ps, err := Compile(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := ps[0].ApplyConcurrency; got != c.want {
			t.Errorf("%s: apply_concurrency %d, want %d", c.name, got, c.want)
		}
	}
	if DefaultApplyConcurrency != 2 || DefaultAggregateApplyConcurrency != 4 {
		t.Errorf("defaults %d and %d: docs/config.md says 2, and 4 for an aggregate", DefaultApplyConcurrency, DefaultAggregateApplyConcurrency)
	}
}

// TestCompileErrors: each broken declaration names its key and the fix,
// and all problems come at once.
func TestCompileErrors(t *testing.T) {
	cases := []struct {
		why    string
		mutate func(*config.Projection, *config.Config)
		want   string
	}{
		{"from not captured", func(p *config.Projection, _ *config.Config) { p.From = "chat.other" }, "projections.messages_by_sender.from chat.other is not in source.tables"},
		{"from malformed", func(p *config.Projection, _ *config.Config) { p.From = "messages" }, `projections.messages_by_sender.from "messages": want db.table`},
		{"unknown sink", func(p *config.Projection, _ *config.Config) { p.Sink = "nope" }, `projections.messages_by_sender.sink "nope" is not a configured sink`},
		{"empty key", func(p *config.Projection, _ *config.Config) { p.Key = nil; p.ShardBy = "" }, "projections.messages_by_sender.key is empty"},
		{"key column not mapped", func(p *config.Projection, _ *config.Config) { p.Key = append(p.Key, "ghost") }, `key column "ghost" is not in projections.messages_by_sender.columns`},
		{"shard_by outside the key", func(p *config.Projection, _ *config.Config) { p.ShardBy = "body" }, `shard_by "body" must be one of its key columns`},
		{"empty columns", func(p *config.Projection, _ *config.Config) { p.Columns = nil }, "projections.messages_by_sender.columns is empty"},
		{"bad on_error", func(p *config.Projection, _ *config.Config) { p.OnError = "ignore" }, `on_error "ignore": want dlq or stop`},
		{"where does not parse", func(p *config.Projection, _ *config.Config) { p.Where = "body = 'x" }, `projections.messages_by_sender.where "body = 'x": at offset 7: unterminated string: close it with '`},
		{"join parent not captured", func(p *config.Projection, _ *config.Config) {
			p.Join = []config.Join{{From: "chat.users", On: map[string]string{"id": "sender_id"}, Columns: map[string]string{"sender_name": "name"}}}
		}, "projections.messages_by_sender.join[0].from chat.users is not in source.tables: add it there"},
		{"join on unmapped column", func(p *config.Projection, c *config.Config) {
			c.Source.Tables = append(c.Source.Tables, "chat.users")
			p.Join = []config.Join{{From: "chat.users", On: map[string]string{"id": "author"}, Columns: map[string]string{"sender_name": "name"}}}
		}, `projections.messages_by_sender.join[0].on.id: source column "author" is not mapped in projections.messages_by_sender.columns: add it`},
		{"join column clashes", func(p *config.Projection, c *config.Config) {
			c.Source.Tables = append(c.Source.Tables, "chat.users")
			p.Join = []config.Join{{From: "chat.users", On: map[string]string{"id": "sender_id"}, Columns: map[string]string{"body": "name"}}}
		}, "projections.messages_by_sender.join[0].columns.body: body is already a column of projections.messages_by_sender.columns: rename one of them"},
		{"join without columns", func(p *config.Projection, c *config.Config) {
			c.Source.Tables = append(c.Source.Tables, "chat.users")
			p.Join = []config.Join{{From: "chat.users", On: map[string]string{"id": "sender_id"}}}
		}, "projections.messages_by_sender.join[0].columns is empty"},
		{"sharded sink without shard_by", func(p *config.Projection, c *config.Config) {
			p.ShardBy = ""
			c.Sinks["reads"] = config.Sink{Shards: []config.Shard{{KeyRange: "-80", DSN: "a"}, {KeyRange: "80-", DSN: "b"}}}
		}, "projections.messages_by_sender: sink reads has 2 shards: set shard_by to one of the key columns [created_at id sender_id], or replicated: true to copy the table to every shard"},
		{"replicated with shard_by", func(p *config.Projection, _ *config.Config) { p.Replicated = true }, "replicated projections are copied to every shard and take no shard_by"},
		{"reserved column name", func(p *config.Projection, _ *config.Config) { p.Columns["_rs_version"] = "id" }, "projections.messages_by_sender.columns._rs_version: the _rs_ prefix is readside's own"},
		{"_rs_ in other case: MySQL column names ignore case", func(p *config.Projection, _ *config.Config) { p.Columns["_RS_Version"] = "id" }, "projections.messages_by_sender.columns._RS_Version: the _rs_ prefix is readside's own: rename the column"},
		{"a read column over 64 characters", func(p *config.Projection, _ *config.Config) { p.Columns[strings.Repeat("ü", 65)] = "id" }, "65 characters, MySQL allows at most 64: rename the column"},
		{"a read column ending in a space", func(p *config.Projection, _ *config.Config) { p.Columns["body "] = "id" }, "MySQL names cannot end with a space"},
		{"a read column outside the BMP", func(p *config.Projection, _ *config.Config) { p.Columns["x😀"] = "id" }, "MySQL names cannot hold U+1F600"},
		{"a join read column is checked too", func(p *config.Projection, c *config.Config) {
			c.Source.Tables = append(c.Source.Tables, "chat.users")
			p.Join = []config.Join{{From: "chat.users", On: map[string]string{"id": "sender_id"}, Columns: map[string]string{"_rs_name": "name"}}}
		}, "projections.messages_by_sender.join[0].columns._rs_name: the _rs_ prefix is readside's own"},
		{"a read table over 64 characters", func(p *config.Projection, _ *config.Config) { p.Table = strings.Repeat("t", 65) }, "projections.messages_by_sender: read table \"" + strings.Repeat("t", 65) + "\": 65 characters, MySQL allows at most 64: set projections.messages_by_sender.table"},
	}
	for _, c := range cases {
		cfg := baseConfig()
		p := cfg.Projections["messages_by_sender"]
		c.mutate(&p, &cfg)
		cfg.Projections["messages_by_sender"] = p
		_, err := Compile(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.why, err, c.want)
		}
	}
	// Several problems are reported together.
	cfg := baseConfig()
	p := cfg.Projections["messages_by_sender"]
	p.Sink, p.OnError = "nope", "ignore"
	cfg.Projections["messages_by_sender"] = p
	if _, err := Compile(cfg); err == nil || strings.Count(err.Error(), "\n") < 1 {
		t.Errorf("want two problems at once, got %v", err)
	}
}

// TestWritesKeyMove: an update that changes the read key is a delete of
// the old read row and an upsert of the new one at the same version.
func TestWritesKeyMove(t *testing.T) {
	ps, err := Compile(baseConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	e, err := event.DecodeEvent([]byte(`{"op":"u","version":42,
		"before":{"id":1,"sender_id":7,"created_at":"2026-01-01 00:00:00.000000","body":"a"},
		"after":{"id":1,"sender_id":8,"created_at":"2026-01-01 00:00:00.000000","body":"a"},
		"schema":{"version":"x","columns":{"id":"int","sender_id":"int","created_at":"datetime(6)","body":"varchar"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := p.Writes(e)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0].Kind != Delete || ws[1].Kind != Upsert || ws[0].Version != 42 || ws[1].Version != 42 || ws[0].Key == ws[1].Key {
		t.Fatalf("key move gave %+v", ws)
	}
	// An in-place update is one upsert.
	after := e.After.Map()
	after["sender_id"], _ = e.Before.Get("sender_id")
	e.After = event.ImageOf(after)
	if ws, _ := p.Writes(e); len(ws) != 1 || ws[0].Kind != Upsert {
		t.Errorf("in-place update gave %+v", ws)
	}
	// Hostile input fails closed with a reason.
	for _, bad := range []string{`{`, `{"op":"x","version":1}`, `{"op":"c"}`} {
		if _, err := event.DecodeEvent([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	// Events missing the image they need are refused, not a crash: this
	// projection has no filter to refuse them first.
	row := `{"id":1,"sender_id":7,"created_at":"2026-01-02 03:04:05","body":"x"}`
	for _, bad := range []string{
		`{"op":"u","version":5,"before":null,"after":` + row + `}`,
		`{"op":"u","version":5,"after":` + row + `}`,
		`{"op":"u","version":5,"before":` + row + `}`,
		`{"op":"d","version":5}`,
		`{"op":"c","version":5,"after":null}`,
	} {
		e, err := event.DecodeEvent([]byte(bad))
		if err != nil {
			t.Fatalf("%s: %v", bad, err)
		}
		if ws, err := p.Writes(e); err == nil || !strings.Contains(err.Error(), "image") {
			t.Errorf("%s: writes %+v, error %v; want an error naming the missing image", bad, ws, err)
		}
	}
}

func TestCoalesce(t *testing.T) {
	ws := []Write{
		{Kind: Upsert, Key: "a", Version: 3},
		{Kind: Delete, Key: "a", Version: 5},
		{Kind: Upsert, Key: "b", Version: 2},
		{Kind: Truncate, Version: 4},
		{Kind: Upsert, Key: "a", Version: 4}, // late: older than the delete
		{Kind: Upsert, Key: "b", Version: 2}, // duplicate
	}
	got := Coalesce(ws)
	if len(got) != 3 || got[0].Kind != Delete || got[0].Version != 5 || got[1].Key != "b" || got[2].Kind != Truncate {
		t.Errorf("Coalesce = %+v", got)
	}
}

// TestWritesFilter: entering and leaving the where filter behaves like a
// key move, and each event's effect depends on that event alone.
func TestWritesFilter(t *testing.T) {
	cfg := baseConfig()
	p0 := cfg.Projections["messages_by_sender"]
	p0.Where = "body <> 'draft'"
	cfg.Projections["messages_by_sender"] = p0
	ps, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	typeWhere(t, p, messagesDefs)
	ev := func(op, before, after string) event.Event {
		t.Helper()
		img := func(body string) string {
			if body == "" {
				return "null"
			}
			return `{"id":1,"sender_id":7,"created_at":"2026-01-01 00:00:00.000000","body":"` + body + `"}`
		}
		e, err := event.DecodeEvent([]byte(`{"op":"` + op + `","version":9,"before":` + img(before) + `,"after":` + img(after) + `}`))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	kinds := func(ws []Write) string {
		var s []string
		for _, w := range ws {
			s = append(s, map[WriteKind]string{Upsert: "upsert", Delete: "delete", Truncate: "truncate"}[w.Kind])
		}
		return strings.Join(s, ",")
	}
	cases := []struct {
		e    event.Event
		want string
	}{
		{ev("c", "", "hi"), "upsert"},
		{ev("c", "", "draft"), ""},
		{ev("r", "", "draft"), "delete"},
		{ev("u", "draft", "hi"), "upsert"},
		{ev("u", "hi", "draft"), "delete"},
		{ev("u", "draft", "draft"), ""},
		{ev("u", "hi", "ho"), "upsert"},
		{ev("d", "hi", ""), "delete"},
		{ev("d", "draft", ""), ""},
	}
	for _, c := range cases {
		ws, err := p.Writes(c.e)
		if err != nil {
			t.Fatal(err)
		}
		if got := kinds(ws); got != c.want {
			t.Errorf("%s %v -> %v: %s, want %s", c.e.Op, c.e.Before.Map()["body"], c.e.After.Map()["body"], got, c.want)
		}
	}
}

var update = flag.Bool("update", false, "rewrite golden files")

// TestCompileErrorsGolden: one config with ten broken declarations gives
// every message at once, each naming the key and the fix; the whole text
// is pinned in testdata/compile_errors.golden (go test -update rewrites it).
func TestCompileErrorsGolden(t *testing.T) {
	cfg := config.Default()
	cfg.Source.Tables = []string{"shop.orders", "shop.customers"}
	cfg.Sinks = map[string]config.Sink{
		"reads": {DSN: "u:p@tcp(h:1)/reads"},
		"two":   {Shards: []config.Shard{{KeyRange: "-80", DSN: "a"}, {KeyRange: "80-", DSN: "b"}}},
	}
	cols := map[string]string{"id": "id", "customer_id": "customer_id", "status": "status"}
	cfg.Projections = map[string]config.Projection{
		"a_from":     {From: "orders", Sink: "reads", Key: []string{"id"}, Columns: cols},
		"b_capture":  {From: "shop.items", Sink: "reads", Key: []string{"id"}, Columns: cols},
		"c_sink":     {From: "shop.orders", Sink: "nope", Key: []string{"id"}, Columns: cols},
		"d_key":      {From: "shop.orders", Sink: "reads", Key: []string{"id", "ghost"}, Columns: cols},
		"e_shard":    {From: "shop.orders", Sink: "reads", Key: []string{"id"}, ShardBy: "status", Columns: cols},
		"f_where":    {From: "shop.orders", Sink: "reads", Key: []string{"id"}, Columns: cols, Where: "status = 'x"},
		"g_onerror":  {From: "shop.orders", Sink: "reads", Key: []string{"id"}, Columns: cols, OnError: "skip"},
		"h_joinon":   {From: "shop.orders", Sink: "reads", Key: []string{"id"}, Columns: cols, Join: []config.Join{{From: "shop.customers", On: map[string]string{"id": "buyer"}, Columns: map[string]string{"name": "name"}}}},
		"i_sharded":  {From: "shop.orders", Sink: "two", Key: []string{"id"}, Columns: cols},
		"j_reserved": {From: "shop.orders", Sink: "reads", Key: []string{"id"}, Columns: map[string]string{"id": "id", "_rs_version": "status"}},
	}
	_, err := Compile(cfg)
	if err == nil {
		t.Fatal("ten broken declarations compiled")
	}
	got := err.Error() + "\n"
	path := filepath.Join("testdata", "compile_errors.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestCompileErrorsGolden -update ./projections/ to create it)", err)
	}
	if got != string(want) {
		t.Errorf("compile errors changed:\n--- got\n%s--- want\n%s", got, want)
	}
	if n := strings.Count(got, "\n"); n < 10 {
		t.Errorf("%d messages, want at least ten", n)
	}
}

// TestNullableKeys: a key column copying a nullable source column is
// accepted only when the filter keeps NULL out, and the refusal names the
// filter as the fix and the source change as the alternative.
func TestNullableKeys(t *testing.T) {
	cases := []struct {
		why      string
		where    string
		nullable []string
		want     []string // substrings of the one error; nil: accepted
	}{
		{"NOT NULL source columns need no filter", "", nil, nil},
		{"a nullable shard key without a filter is refused", "", []string{"sender_id"},
			[]string{"projections.messages_by_sender.key column sender_id (shard_by) copies chat.messages.sender_id, which is nullable", `add where: "sender_id IS NOT NULL"`, "or make sender_id NOT NULL in the source"}},
		{"IS NOT NULL alone accepts it", "sender_id IS NOT NULL", []string{"sender_id"}, nil},
		{"ANDed with more at the top level", "body <> 'draft' AND sender_id IS NOT NULL", []string{"sender_id"}, nil},
		{"a comparison with a literal implies NOT NULL", "sender_id > 0", []string{"sender_id"}, nil},
		{"an IN list implies NOT NULL", "sender_id IN (1, 2)", []string{"sender_id"}, nil},
		{"a filter on another column does not help; the fix extends it", "body <> 'draft'", []string{"sender_id"},
			[]string{"key column sender_id (shard_by)", `extend where to "(body <> 'draft') AND sender_id IS NOT NULL"`}},
		{"an OR with a branch that passes NULL does not help", "sender_id IS NOT NULL OR body = 'x'", []string{"sender_id"},
			[]string{"key column sender_id (shard_by)"}},
		{"a non-shard key column is named as a key column", "", []string{"created_at"},
			[]string{"projections.messages_by_sender.key column created_at copies chat.messages.created_at", `add where: "created_at IS NOT NULL"`}},
		{"a nullable non-key column needs nothing", "", []string{"body"}, nil},
	}
	for _, c := range cases {
		cfg := baseConfig()
		d := cfg.Projections["messages_by_sender"]
		d.Where = c.where
		cfg.Projections["messages_by_sender"] = d
		ps, err := Compile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		errs := ps[0].NullableKeys(func(col string) bool { return slices.Contains(c.nullable, col) })
		if c.want == nil {
			if len(errs) > 0 {
				t.Errorf("%s: refused: %v", c.why, errs)
			}
			continue
		}
		if len(errs) != 1 {
			t.Errorf("%s: %d errors %v, want one", c.why, len(errs), errs)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(errs[0].Error(), w) {
				t.Errorf("%s: %q lacks %q", c.why, errs[0], w)
			}
		}
	}
}

// TestWritesNullableKey: with a nullable key column kept out by the
// filter, NULL rows never reach the read table, a row whose key becomes
// NULL leaves it, and no event fails on the NULL key.
func TestWritesNullableKey(t *testing.T) {
	cfg := baseConfig()
	d := cfg.Projections["messages_by_sender"]
	d.Where = "sender_id IS NOT NULL"
	cfg.Projections["messages_by_sender"] = d
	ps, err := Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	typeWhere(t, p, messagesDefs)
	img := func(sender string) string {
		if sender == "" {
			return "null"
		}
		return `{"id":1,"sender_id":` + sender + `,"created_at":"2026-01-01 00:00:00.000000","body":"b"}`
	}
	cases := []struct {
		op, before, after string
		want              string
		why               string
	}{
		{"c", "", "null", "", "a NULL row never reaches the read table"},
		{"c", "", "5", "upsert", "a non-NULL row does"},
		{"r", "", "null", "", "a snapshot row with NULL: no read row can have that key, nothing to delete"},
		{"r", "", "5", "upsert", "a snapshot row without NULL"},
		{"u", "5", "null", "delete", "into NULL: the row leaves the filter"},
		{"u", "null", "5", "upsert", "out of NULL: the row enters it"},
		{"u", "null", "null", "", "NULL to NULL: nothing"},
		{"d", "null", "", "", "deleting a NULL row: it was never there"},
		{"d", "5", "", "delete", "deleting a non-NULL row"},
	}
	for _, c := range cases {
		e, err := event.DecodeEvent([]byte(`{"op":"` + c.op + `","version":9,"before":` + img(c.before) + `,"after":` + img(c.after) + `}`))
		if err != nil {
			t.Fatal(err)
		}
		ws, err := p.Writes(e)
		if err != nil {
			t.Errorf("%s %s->%s: %v (%s)", c.op, c.before, c.after, err, c.why)
			continue
		}
		var got []string
		for _, w := range ws {
			got = append(got, map[WriteKind]string{Upsert: "upsert", Delete: "delete"}[w.Kind])
		}
		if strings.Join(got, ",") != c.want {
			t.Errorf("%s %s->%s: %v, want %q (%s)", c.op, c.before, c.after, got, c.want, c.why)
		}
	}
	// Without the filter (a column made nullable by DDL after the check),
	// a NULL key fails the event with the fix.
	plain, err := Compile(baseConfig())
	if err != nil {
		t.Fatal(err)
	}
	e, err := event.DecodeEvent([]byte(`{"op":"c","version":9,"after":` + img("null") + `}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain[0].Writes(e); err == nil || !strings.Contains(err.Error(), `add where: "sender_id IS NOT NULL" to projections.messages_by_sender`) {
		t.Errorf("a NULL key without a filter: %v; want an error naming the filter as the fix", err)
	}
}

// TestIdentProblemAcceptsHostileNames: quoting makes these ordinary names,
// so check must not refuse them.
func TestIdentProblemAcceptsHostileNames(t *testing.T) {
	for _, name := range []string{"select", "order", "a b", "a`b", "it's", `say "hi"`, "a-b", "ünï", "日本", strings.Repeat("日", 64), " leading"} {
		if why := identProblem(name); why != "" {
			t.Errorf("identProblem(%q) = %q, want none", name, why)
		}
	}
}
