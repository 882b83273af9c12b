package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/config"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// castModel is the model of a film with its cast by name (the bench's
// film_cast, on the sample schema's tables).
func castModel(t *testing.T) *arrayModel {
	t.Helper()
	cfg := config.Default()
	cfg.Source.Tables = []string{"s.film", "s.film_actor", "s.actor"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{"cast": {
		From: "s.film", Sink: "reads", Key: []string{"id"},
		Columns: map[string]string{"id": "id", "title": "title"},
		Children: map[string]config.Children{"actors": {From: "s.film_actor", On: map[string]string{"film_id": "id"},
			Columns: map[string]string{"actor_id": "actor_id"},
			Join:    []config.Join{{From: "s.actor", On: map[string]string{"id": "actor_id"}, Columns: map[string]string{"last_name": "last_name"}}},
			OrderBy: []string{"last_name"}, Limit: 2}},
	}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ps[0].Children[0].SetSourceKey([]string{"id"})
	m, err := newArrayModel(ps[0])
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ev is an event of version v with before and after images (JSON
// objects, "" for none).
func ev(t *testing.T, v int, before, after string) event.Event {
	t.Helper()
	op := map[bool]string{true: "u", false: "c"}[before != ""]
	if after == "" {
		op = "d"
	}
	s := fmt.Sprintf(`{"op":%q,"version":%d`, op, v)
	if before != "" {
		s += `,"before":` + before
	}
	if after != "" {
		s += `,"after":` + after
	}
	e, err := event.DecodeEvent([]byte(s + `,"schema":{"version":"x","columns":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestArrayModel: the read rows B2 writes for a children projection are
// the projector's — each parent with its children's elements (the join
// parent's columns in them) in order_by order, at most limit, and the
// count of all — and every change that moves an array touches its
// parent: a child added, moved to another parent or deleted, a join
// parent renamed (every parent whose children show it), the parent's
// own row.
func TestArrayModel(t *testing.T) {
	m := castModel(t)
	const film, cast, actor = "readside.s.film", "readside.s.film_actor", "readside.s.actor"
	steps := []struct {
		topic, before, after string
		touched              []string
	}{
		{actor, "", `{"id":1,"last_name":"ZED"}`, nil},
		{actor, "", `{"id":2,"last_name":"adams"}`, nil},
		{film, "", `{"id":10,"title":"A"}`, []string{"10"}},
		{cast, "", `{"id":100,"film_id":10,"actor_id":1}`, []string{"10"}},
		{cast, "", `{"id":101,"film_id":10,"actor_id":2}`, []string{"10"}},
		{cast, "", `{"id":102,"film_id":11,"actor_id":1}`, []string{"11"}},
		{actor, `{"id":1,"last_name":"ZED"}`, `{"id":1,"last_name":"Baker"}`, []string{"10", "11"}},
		{cast, `{"id":102,"film_id":11,"actor_id":1}`, `{"id":102,"film_id":10,"actor_id":1}`, []string{"11", "10"}},
		{film, `{"id":10,"title":"A"}`, `{"id":10,"title":"it's"}`, []string{"10"}},
	}
	for i, s := range steps {
		got := m.apply(s.topic, ev(t, i+1, s.before, s.after))
		if !slices.Equal(got, s.touched) {
			t.Errorf("step %d (%s %s): touched %v, want %v", i, s.topic, s.after, got, s.touched)
		}
	}
	// Film 10: adams, Baker, Baker (ties by the cast row's key), limit 2;
	// count 3; version of the last change. Film 11: no parent row, no
	// children left.
	want := `(10,'it''s','[{"actor_id": 2, "last_name": "adams"}, {"actor_id": 1, "last_name": "Baker"}]',3,9)`
	if got := m.row("10"); got != want {
		t.Errorf("film 10's row %s, want %s", got, want)
	}
	if got := m.row("11"); got != "" {
		t.Errorf("film 11 has neither a row nor children: got %s", got)
	}
	if got := strings.Join(m.columns(), ","); got != "id,title,actors,actors_count,_rs_version" {
		t.Errorf("columns %s", got)
	}
	// A deleted child leaves its parent's array.
	m.apply(cast, ev(t, 10, `{"id":101,"film_id":10,"actor_id":2}`, ""))
	if got := m.row("10"); !strings.Contains(got, `[{"actor_id": 1, "last_name": "Baker"}, {"actor_id": 1, "last_name": "Baker"}]',2,10)`) {
		t.Errorf("after the delete film 10's row is %s", got)
	}
}

// TestArrayBatches: each batch writes the rows its records changed once,
// as of its last record that changed them, version-guarded; the final
// statements write every row as the replay leaves it.
func TestArrayBatches(t *testing.T) {
	m := castModel(t)
	rec := func(topic, value string) *kgo.Record { return &kgo.Record{Topic: topic, Value: []byte(value)} }
	const film, cast = "readside.s.film", "readside.s.film_actor"
	recs := []*kgo.Record{
		rec(film, `{"op":"c","version":1,"after":{"id":10,"title":"A"},"schema":{"version":"x","columns":{}}}`),
		rec(film, `{"op":"u","version":2,"before":{"id":10,"title":"A"},"after":{"id":10,"title":"B"},"schema":{"version":"x","columns":{}}}`),
		rec(cast, `{"op":"c","version":3,"after":{"id":100,"film_id":10,"actor_id":1},"schema":{"version":"x","columns":{}}}`),
	}
	at := map[*kgo.Record][2]int{recs[0]: {0, 0}, recs[1]: {0, 0}, recs[2]: {1, 0}}
	steps, err := sourceOrder([]*kgo.Record{recs[2], recs[0], recs[1]})
	if err != nil {
		t.Fatal(err)
	}
	after, final, err := arrayBatches(m.p, "t", steps, at, [][]*projections.Batch{{nil}, {nil}})
	if err != nil {
		t.Fatal(err)
	}
	if len(after[0][0]) != 1 || !strings.Contains(after[0][0][0], "VALUES (10,'B',NULL,0,2) ON DUPLICATE KEY UPDATE `id` = IF(VALUES(`_rs_version`) > `_rs_version`, VALUES(`id`), `id`)") {
		t.Errorf("connection 0's batch: %q (film 10 once, as of version 2)", after[0][0])
	}
	if len(after[1][0]) != 1 || !strings.Contains(after[1][0][0], `VALUES (10,'B','[{"actor_id": 1, "last_name": null}]',1,3)`) {
		t.Errorf("connection 1's batch: %q (the cast row's film, its actor not yet known)", after[1][0])
	}
	if len(final) != 1 || !strings.Contains(final[0], `VALUES (10,'B','[{"actor_id": 1, "last_name": null}]',1,3) `) {
		t.Errorf("final rows: %q", final)
	}
}
