package sinks

import (
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
)

// TestLockText: a parent key is one lock entry whatever the kinds its
// values were read as, so a transaction never locks one row in two modes.
func TestLockText(t *testing.T) {
	cases := []struct {
		why  string
		a, b []projections.Value
		same bool
	}{
		{"signed text and unsigned of one number are one key", projections.ValuesOf("5"), projections.ValuesOf(uint64(5)), true},
		{"different numbers are two keys", projections.ValuesOf("5"), projections.ValuesOf("50"), false},
		{"composite keys do not run together", projections.ValuesOf("1", "23"), projections.ValuesOf("12", "3"), false},
	}
	for _, tc := range cases {
		if got := lockText(tc.a) == lockText(tc.b); got != tc.same {
			t.Errorf("%s: same = %v", tc.why, got)
		}
	}
}

// TestChildJoinStatements: the refresh LEFT JOINs the child state to each
// join's parent state (via the carried key), orders by a joined member;
// a parent change finds the links below it through the joins between.
func TestChildJoinStatements(t *testing.T) {
	cfg := config.Default()
	cfg.Source.Tables = []string{"s.film", "s.film_actor", "s.actor", "s.country"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{"films": {
		From: "s.film", Sink: "reads", Key: []string{"film_id"}, Columns: map[string]string{"film_id": "film_id"},
		Children: map[string]config.Children{"actors": {From: "s.film_actor", On: map[string]string{"film_id": "film_id"},
			Columns: map[string]string{"actor_id": "actor_id"},
			Join: []config.Join{
				{From: "s.actor", As: "a", On: map[string]string{"actor_id": "actor_id"}, Columns: map[string]string{"last": "last_name"}},
				{From: "s.country", Via: "a", On: map[string]string{"country_id": "country_id"}, Columns: map[string]string{"country": "name"}},
			}, OrderBy: []string{"last"}}},
	}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	c := p.Children[0]
	c.SetSourceKey([]string{"film_id", "actor_id"})
	st := childStatementsOf(p, c, dialectOf("10.11.6-MariaDB"))
	refresh := st.refresh.text(1)
	for _, want := range []string{
		"JSON_OBJECT('actor_id', s.`c_actor_id`, 'last', j1.`c_last`, 'country', j2.`c_country`) ORDER BY j1.`c_last`, s.`c_film_id`, s.`c_actor_id`)",
		"LEFT JOIN `_readside_childjoin_films_actors_1` AS j1 ON j1.`k_actor_id` = s.`c_actor_id` LEFT JOIN `_readside_childjoin_films_actors_2` AS j2 ON j2.`k_country_id` = j1.`c__rs_j1_country_id`",
	} {
		if !strings.Contains(refresh, want) {
			t.Errorf("refresh lacks %q:\n%s", want, refresh)
		}
	}
	if got, want := st.joins[1].links.text(1), "SELECT DISTINCT s.`c_film_id` FROM `_readside_child_films_actors` AS s JOIN `_readside_childjoin_films_actors_1` AS j1 ON j1.`k_actor_id` = s.`c_actor_id` WHERE s.`c_film_id` IS NOT NULL AND j1.`c__rs_j1_country_id` IN (?)"; got != want {
		t.Errorf("a country's links:\ngot  %s\nwant %s", got, want)
	}
}
