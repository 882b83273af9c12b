package verify

import (
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
)

// TestJoinedGroupsSQL: a group column from a joined parent is computed on
// the source through inner joins along its via chain, rows with a NULL
// group value left out; an expression over it is computed over the
// parent's columns; repair selects a group's source rows through the
// chain.
func TestJoinedGroupsSQL(t *testing.T) {
	cfg := config.Default()
	cfg.Source.Tables = []string{"rent.payment", "rent.rental", "rent.film"}
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "x"}}
	joins := []config.Join{
		{From: "rent.rental", As: "r", On: map[string]string{"rental_id": "rental_id"}},
		{From: "rent.film", Via: "r", On: map[string]string{"film_id": "film_id"}, Columns: map[string]string{"category_id": "cat"}},
	}
	for _, c := range []struct {
		why, group, from, member string
	}{
		{"a joined column, two joins away", "category_id",
			"(SELECT (j2.`cat`) AS `category_id`, COUNT(*) AS `n` FROM `rent`.`payment` s JOIN `rent`.`rental` j1 ON j1.`rental_id` = s.`rental_id` " +
				"JOIN `rent`.`film` j2 ON j2.`film_id` = j1.`film_id` WHERE (j2.`cat`) IS NOT NULL GROUP BY 1) s",
			"(SELECT j2.`cat` FROM `rent`.`rental` j1 JOIN `rent`.`film` j2 ON j2.`film_id` = j1.`film_id` WHERE j1.`rental_id` = p.`rental_id`)"},
		{"an expression over it", "category_id DIV 2",
			"(SELECT ((j2.`cat` DIV 2)) AS `category_id_div_2`, COUNT(*) AS `n` FROM `rent`.`payment` s JOIN `rent`.`rental` j1 ON j1.`rental_id` = s.`rental_id` " +
				"JOIN `rent`.`film` j2 ON j2.`film_id` = j1.`film_id` WHERE ((j2.`cat` DIV 2)) IS NOT NULL GROUP BY 1) s",
			"(SELECT (j2.`cat` DIV 2) FROM `rent`.`rental` j1 JOIN `rent`.`film` j2 ON j2.`film_id` = j1.`film_id` WHERE j1.`rental_id` = p.`rental_id`)"},
	} {
		cfg.Projections = map[string]config.Projection{"sales": {From: "rent.payment", Sink: "reads", Join: joins,
			GroupBy: []string{c.group}, Aggregates: map[string]string{"n": "count(*)"}}}
		ps, err := projections.Compile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := ps[0]
		pl := newPlan(p, nil)
		if got := pl.sourceFrom(true, true); got != c.from {
			t.Errorf("%s: sourceFrom\n got %s\nwant %s", c.why, got, c.from)
		}
		jg := p.Aggregation.JoinedGroupIndex(0)
		if got := joinedGroupOf(jg, func(col string) string { return "p." + q(col) }); got != c.member {
			t.Errorf("%s: a member's group\n got %s\nwant %s", c.why, got, c.member)
		}
	}
}
