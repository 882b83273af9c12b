package projections_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/cdc"
	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/verify"
)

// castShop is films with their cast nested: film_with_actors holds, per
// film, the film_actor rows as a JSON array whose elements carry the
// actor's names (join) and the actor's country's name (a join via the
// actor), ordered by last name (a joined column), capped at castLimit.
// The actors' country_id is nullable (an actor without a country) and
// film_actor.actor_id wider than actor.actor_id, as happens.
const (
	castFilm      = "CREATE TABLE `%s`.film (film_id INT PRIMARY KEY, title VARCHAR(40) CHARACTER SET utf8mb4 NOT NULL)"
	castFilmActor = "CREATE TABLE `%s`.film_actor (film_id INT NOT NULL, actor_id BIGINT NOT NULL, role VARCHAR(20) CHARACTER SET utf8mb4 NULL, PRIMARY KEY (film_id, actor_id), KEY (actor_id))"
	castActor     = "CREATE TABLE `%s`.actor (actor_id INT PRIMARY KEY, first_name VARCHAR(30) CHARACTER SET utf8mb4 NOT NULL, last_name VARCHAR(30) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL, country_id INT NULL)"
	castCountry   = "CREATE TABLE `%s`.country (country_id INT PRIMARY KEY, name VARCHAR(30) CHARACTER SET utf8mb4 NOT NULL)"
	castLimit     = 4
)

func newCastShop(t *testing.T, bed *testbed.Bed, keyranges ...string) *lineShop {
	t.Helper()
	ctx := t.Context()
	s := &lineShop{bed: bed}
	var err error
	if s.src, err = bed.MySQL.CreateDatabase(ctx, "cast"); err != nil {
		t.Fatal(err)
	}
	for _, ddl := range []string{castFilm, castFilmActor, castActor, castCountry} {
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf(ddl, s.src)); err != nil {
			t.Fatal(err)
		}
	}
	s.cfg = bed.Config("cj", s.src+".film", s.src+".film_actor", s.src+".actor", s.src+".country")
	s.cfg.Projections = map[string]config.Projection{"film_with_actors": {
		From: s.src + ".film", Sink: "reads", Key: []string{"film_id"}, ShardBy: "film_id",
		Columns: map[string]string{"film_id": "film_id", "title": "title"},
		Children: map[string]config.Children{"actors": {
			From: s.src + ".film_actor", On: map[string]string{"film_id": "film_id"},
			Columns: map[string]string{"actor_id": "actor_id", "role": "role"},
			Join: []config.Join{
				{From: s.src + ".actor", As: "a", On: map[string]string{"actor_id": "actor_id"},
					Columns: map[string]string{"first_name": "first_name", "last_name": "last_name"}},
				{From: s.src + ".country", Via: "a", On: map[string]string{"country_id": "country_id"},
					Columns: map[string]string{"country": "name"}},
			},
			OrderBy: []string{"last_name"}, Limit: castLimit,
		}},
	}}
	s.openSink(t, keyranges...)
	return s
}

// castExpected is what the read table must hold, computed on the source
// by the SQL the array is defined by: the child rows LEFT JOINed to their
// parents.
func castExpected(t *testing.T, s *lineShop) string {
	from := fmt.Sprintf("FROM `%[1]s`.film_actor fa LEFT JOIN `%[1]s`.actor a ON a.actor_id = fa.actor_id LEFT JOIN `%[1]s`.country c ON c.country_id = a.country_id WHERE fa.film_id = f.film_id", s.src)
	return testbed.RowsText(t, s.bed.MySQL.DB(), fmt.Sprintf("SELECT f.film_id, f.title,"+
		" (SELECT JSON_ARRAYAGG(JSON_OBJECT('actor_id', fa.actor_id, 'role', fa.role, 'first_name', a.first_name, 'last_name', a.last_name, 'country', c.name) ORDER BY a.last_name, fa.film_id, fa.actor_id LIMIT %d) %s),"+
		" (SELECT COUNT(*) %s) FROM `%s`.film f ORDER BY 1", castLimit, from, from, s.src))
}

func castActual(t *testing.T, s *lineShop) string {
	var parts []string
	for _, db := range s.shards {
		parts = append(parts, "SELECT film_id, title, actors, actors_count FROM `"+db+"`.film_with_actors")
	}
	return testbed.RowsText(t, s.bed.MySQL.DB(), "SELECT * FROM ("+strings.Join(parts, " UNION ALL ")+") u ORDER BY 1")
}

func castConverge(t *testing.T, s *lineShop, step string, want ...string) {
	t.Helper()
	testbed.Eventually(t, 90*time.Second, func() (bool, string) {
		exp, got := castExpected(t, s), castActual(t, s)
		return exp == got, fmt.Sprintf("%s: the read table differs from JSON_ARRAYAGG over the joined rows on the source:\nwant:\n%.3000s\ngot:\n%.3000s", step, exp, got)
	})
	exp := castExpected(t, s)
	for _, w := range want {
		if !strings.Contains(exp, w) {
			t.Fatalf("%s: the source query has no %q, the step tests nothing:\n%s", step, w, exp)
		}
	}
}

// castWrite is a seeded workload: films created, retitled and deleted;
// cast rows added, given roles and removed; actors renamed (the order
// key), moved between countries (and to none), deleted and inserted
// again; countries renamed, deleted and inserted again.
func castWrite(t *testing.T, s *lineShop, seed uint64, ops int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 23))
	country := func() any {
		if rng.IntN(6) == 0 {
			return nil
		}
		return 1 + rng.IntN(5)
	}
	for i := range ops {
		fid, aid := 1+rng.IntN(30), 1+rng.IntN(25)
		switch r := rng.IntN(100); {
		case r < 10:
			s.exec(t, "INSERT INTO $.film VALUES (?, ?) ON DUPLICATE KEY UPDATE title = VALUES(title)", fid, fmt.Sprint("t", i))
		case r < 13:
			s.exec(t, "DELETE FROM $.film WHERE film_id = ?", fid)
		case r < 38:
			s.exec(t, "INSERT INTO $.film_actor VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE role = VALUES(role)", fid, aid, fmt.Sprintf("r'%d ✓", rng.IntN(9)))
		case r < 50:
			s.exec(t, "DELETE FROM $.film_actor WHERE film_id = ? AND actor_id = ?", fid, aid)
		case r < 72:
			s.exec(t, "INSERT INTO $.actor VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE last_name = VALUES(last_name), first_name = VALUES(first_name)",
				aid, fmt.Sprint("f", i), fmt.Sprintf("L%d \"ü\"", rng.IntN(8)), country())
		case r < 80:
			s.exec(t, "UPDATE $.actor SET country_id = ? WHERE actor_id = ?", country(), aid)
		case r < 86:
			s.exec(t, "DELETE FROM $.actor WHERE actor_id = ?", aid)
		case r < 94:
			s.exec(t, "INSERT INTO $.country VALUES (?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name)", 1+rng.IntN(5), fmt.Sprint("c", i))
		case r < 96:
			s.exec(t, "DELETE FROM $.country WHERE country_id = ?", 1+rng.IntN(5))
		default:
			s.exec(t, "UPDATE $.actor SET last_name = CONCAT(last_name, 'x') WHERE actor_id IN (?, ?)", aid, 1+rng.IntN(25)) // multi-row
		}
	}
}

// TestChildrenJoin: elements carry their parents' columns, live (tailer,
// projector, two shards): each step one at a time — a cast row before
// its actor (NULL members), the actor arriving, renamed (the array
// reorders), moved to another country and to none, the country renamed
// (through the via join), the actor deleted (NULL members again) and
// inserted again, the actor table truncated; then a seeded workload with
// two projector workers, one stopped and started again midway; then
// verify finds no drift; then the whole history, shuffled across
// batches with a fifth duplicated, applied to a fresh sink. Each state
// equals JSON_ARRAYAGG over the child rows LEFT JOINed to their parents
// on the source.
func TestChildrenJoin(t *testing.T) {
	bed := testbed.Get(t)
	s := newCastShop(t, bed, "-80", "80-")
	tl := runTailer(t, bed, s.cfg)
	a := startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)

	s.exec(t, "INSERT INTO $.film VALUES (1, 'Alien'), (2, 'Brazil')")
	s.exec(t, "INSERT INTO $.film_actor VALUES (1, 10, 'lead'), (1, 11, NULL), (2, 10, 'cameo')")
	castConverge(t, s, "cast rows before their actors", `1|Alien|[{"actor_id": 10, "role": "lead", "first_name": null, "last_name": null, "country": null}`)
	s.exec(t, "INSERT INTO $.country VALUES (1, 'UK'), (2, 'US')")
	s.exec(t, "INSERT INTO $.actor VALUES (10, 'Sigourney', 'Weaver', 2), (11, 'Ian', 'Holm', 1)")
	castConverge(t, s, "the actors arrive, ordered by last name", `"first_name": "Ian", "last_name": "Holm", "country": "UK"},{"actor_id": 10`, `2|Brazil|[{"actor_id": 10, "role": "cameo", "first_name": "Sigourney"`)
	s.exec(t, "UPDATE $.actor SET last_name = 'Awe \"ü\"' WHERE actor_id = 10")
	castConverge(t, s, "an actor renamed: every array it is in, reordered", `1|Alien|[{"actor_id": 10, "role": "lead", "first_name": "Sigourney", "last_name": "Awe \"ü\"", "country": "US"}`, `2|Brazil|[{"actor_id": 10, "role": "cameo", "first_name": "Sigourney", "last_name": "Awe`)
	s.exec(t, "UPDATE $.country SET name = 'USA' WHERE country_id = 2")
	castConverge(t, s, "a country renamed (via the actor)", `"country": "USA"}]|1|`)
	s.exec(t, "UPDATE $.actor SET country_id = NULL WHERE actor_id = 11")
	castConverge(t, s, "an actor without a country", `"last_name": "Holm", "country": null}`)
	s.exec(t, "DELETE FROM $.actor WHERE actor_id = 10")
	castConverge(t, s, "an actor deleted: NULL members", `2|Brazil|[{"actor_id": 10, "role": "cameo", "first_name": null, "last_name": null, "country": null}]|1|`)
	s.exec(t, "INSERT INTO $.actor VALUES (10, 'Sigourney', 'Weaver', 1)")
	castConverge(t, s, "the actor inserted again", `2|Brazil|[{"actor_id": 10, "role": "cameo", "first_name": "Sigourney", "last_name": "Weaver", "country": "UK"}]|1|`)
	s.exec(t, "TRUNCATE TABLE $.actor")
	castConverge(t, s, "the actors truncated", `2|Brazil|[{"actor_id": 10, "role": "cameo", "first_name": null, "last_name": null, "country": null}]|1|`)
	s.exec(t, "INSERT INTO $.actor VALUES (10, 'S.', 'Weaver', 1)")
	castConverge(t, s, "an actor after the truncation", `"first_name": "S."`)

	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	b := startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	castWrite(t, s, seed, 900)
	b()
	castWrite(t, s, seed+1, 600)
	b = startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	castConverge(t, s, "live workload")
	a()
	b()
	exp := castExpected(t, s)
	t.Logf("converged: %d films, %d with a cast", strings.Count(exp, "\n"), strings.Count(exp, "[{"))

	vsrc, err := verify.OpenSource(s.cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer vsrc.Close()
	ctx := t.Context()
	rep, err := verify.New(s.p, vsrc, s.sink, verify.Options{Settle: 5 * time.Second, Ends: projector.Ends(s.cfg.Kafka.Brokers), Log: slog.New(slog.DiscardHandler)}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Drift() != 0 || rep.Unsettled != 0 || rep.SourceRows == 0 {
		var text strings.Builder
		rep.WriteText(&text)
		t.Fatalf("verify: drift %d, unsettled %d, source rows %d:\n%.3000s", rep.Drift(), rep.Unsettled, rep.SourceRows, text.String())
	}

	// An actor's name the sink got wrong, in its join state and the
	// arrays: verify finds the arrays differing; repair re-publishes the
	// films, their cast rows and those rows' actors.
	var aid int
	var last string
	for _, sh := range s.sink.Shards {
		// An actor some array shows (the cap may leave it out of all).
		if err := sh.DB().QueryRowContext(ctx, "SELECT k_actor_id, c_last_name FROM `"+s.p.Children[0].JoinStateTable(s.p, s.p.Children[0].Joins[0])+"` j"+
			" WHERE c_last_name IS NOT NULL AND EXISTS (SELECT 1 FROM film_with_actors WHERE actors LIKE CONCAT('%\"actor_id\": ', j.k_actor_id, ',%')) LIMIT 1").Scan(&aid, &last); err == nil {
			break
		}
	}
	if aid == 0 {
		t.Fatal("no array with a named actor to damage")
	}
	for _, sh := range s.sink.Shards {
		if _, err := sh.DB().ExecContext(ctx, "UPDATE `"+s.p.Children[0].JoinStateTable(s.p, s.p.Children[0].Joins[0])+"` SET c_last_name = 'wrong' WHERE k_actor_id = ?", aid); err != nil {
			t.Fatal(err)
		}
		if _, err := sh.DB().ExecContext(ctx, "UPDATE film_with_actors SET actors = REPLACE(actors, CONCAT('\"last_name\": ', JSON_QUOTE(?)), '\"last_name\": \"wrong\"')", last); err != nil {
			t.Fatal(err)
		}
	}
	v := verify.New(s.p, vsrc, s.sink, verify.Options{Settle: 5 * time.Second, Ends: projector.Ends(s.cfg.Kafka.Brokers), Log: slog.New(slog.DiscardHandler)})
	if rep, err = v.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if rep.Different == 0 {
		t.Fatalf("verify after damaging actor %d's last name %q: %+v", aid, last, rep)
	}
	c := startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	request := func(ctx context.Context, table, where string) error {
		return cdc.RequestSnapshot(ctx, s.cfg.Source.DSN.Reveal(), s.cfg.Source.TLS, s.cfg.Source.Snapshot.SignalDB, s.cfg.Source.ServerID, table, where)
	}
	res, err := v.Repair(ctx, rep, request, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.Remaining != 0 {
		t.Fatalf("repair of an actor's name in %d arrays: %+v", rep.Different, *res)
	}
	castConverge(t, s, "after repair")
	c()

	waitPublished(t, bed, tl)
	records := testbed.TopicRecords(t, s.cfg.Kafka.Brokers, s.p.Topics()...)
	s.openSink(t, "-80", "80-")
	applyShuffled(t, s.sink, []*projections.Projection{s.p}, records, rand.New(rand.NewPCG(seed, 5)))
	if want, got := castExpected(t, s), castActual(t, s); want != got {
		t.Fatalf("shuffled history differs from JSON_ARRAYAGG on the source:\nwant:\n%.4000s\ngot:\n%.4000s", want, got)
	}
}

// TestChildrenJoinSchemaErrors: what only the live source schema tells
// about a children join — a parent table that does not exist, an on
// that is not the parent's whole primary key or names a column the child
// (or, via, the parent below) lacks, a member the parent lacks or that is
// binary — is refused by SourceColumns (plan, check, every start), all at
// once, each naming its key and the fix.
func TestChildrenJoinSchemaErrors(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src, err := bed.MySQL.CreateDatabase(ctx, "cjerr")
	if err != nil {
		t.Fatal(err)
	}
	if err := bed.MySQL.Exec(ctx, "CREATE TABLE `"+src+"`.film (film_id INT PRIMARY KEY)",
		"CREATE TABLE `"+src+"`.film_actor (film_id INT NOT NULL, actor_id INT NOT NULL, PRIMARY KEY (film_id, actor_id))",
		"CREATE TABLE `"+src+"`.actor (tenant INT NOT NULL, actor_id INT NOT NULL, name VARCHAR(10), photo BLOB, PRIMARY KEY (tenant, actor_id))"); err != nil {
		t.Fatal(err)
	}
	cfg := bed.Config("cje", src+".film", src+".film_actor", src+".actor", src+".gone")
	cfg.Sinks = map[string]config.Sink{"reads": {DSN: "u:p@tcp(h:1)/reads"}}
	cfg.Projections = map[string]config.Projection{"films": {
		From: src + ".film", Sink: "reads", Key: []string{"film_id"}, Columns: map[string]string{"film_id": "film_id"},
		Children: map[string]config.Children{"actors": {From: src + ".film_actor", On: map[string]string{"film_id": "film_id"},
			Columns: map[string]string{"actor_id": "actor_id"},
			Join: []config.Join{
				{From: src + ".actor", As: "a", On: map[string]string{"actor_id": "actor_no"}, Columns: map[string]string{"name": "name", "photo": "photo", "age": "age"}},
				{From: src + ".gone", Via: "a", On: map[string]string{"id": "gone_id"}, Columns: map[string]string{"x": "x"}},
			}, OrderBy: []string{"name"}}},
	}}
	ps, err := projections.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ps[0].SourceColumns(ctx, bed.MySQL.DB())
	const key = "projections.films.children.actors.join"
	for _, want := range []string{
		key + `[0].on.actor_id: column "actor_no" does not exist in ` + src + `.film_actor (its columns: film_id, actor_id): name the column of ` + src + `.film_actor holding ` + src + `.actor's actor_id`,
		key + `[0].on names parent column(s) [actor_id], but ` + src + `.actor's primary key is [tenant actor_id]: join on the whole primary key`,
		key + `[0].columns.age: column "age" does not exist in ` + src + `.actor`,
		key + `[0].columns.photo: ` + src + `.actor.photo is blob, binary`,
		key + `[1].from: ` + src + `.gone does not exist on the source`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q among the errors, got:\n%v", want, err)
		}
	}
}

// TestChildrenJoinRace: through via first — an actor moved to country C
// and C renamed at once (the move must lock C's state row) —, then a cast
// row added to film X and its actor renamed, each pair applied at the
// same moment by two sink transactions, round after round.
// The cast row's transaction refreshes X's array (reading the actor's old
// name) and then waits at film F, whose read row the test holds. The
// rename's transaction then writes the actor's state and looks for the
// arrays its children are in: the cast row is not committed, so it finds
// none. Without the cast row's lock on the actor's state row, which makes
// the rename wait for it, X keeps the old name for good.
func TestChildrenJoinRace(t *testing.T) {
	bed := testbed.Get(t)
	s := newCastShop(t, bed, "-")
	ctx := t.Context()
	c := s.p.Children[0]
	v := uint64(time.Now().Unix()) << 20
	next := func() uint64 { v++; return v }
	apply := func(b *projections.Batch) {
		t.Helper()
		if err := s.sink.Apply(ctx, s.p, b); err != nil {
			t.Fatal(err)
		}
	}
	film := func(id int) projections.Write {
		return projections.Write{Kind: projections.Upsert, Key: fmt.Sprint(id), Version: next(), Values: projections.ValuesOf(id, "t")}
	}
	cast := func(fid, aid int) projections.ChildWrite {
		vals := map[string]any{"film_id": fid, "actor_id": aid, "role": nil}
		w := projections.ChildWrite{SourceKey: fmt.Sprintf(`{"film_id":%d,"actor_id":%d}`, fid, aid), Version: next(), Link: projections.ValuesOf(fid), LinkKey: fmt.Sprint(fid)}
		for _, col := range c.StateColumns() {
			w.Values = append(w.Values, projections.ValueOf(vals[col]))
		}
		return w
	}
	actor := func(aid int, last string) projections.ChildWrite {
		return projections.ChildWrite{Join: 1, SourceKey: fmt.Sprint(aid), Version: next(), Link: projections.ValuesOf(aid), LinkKey: fmt.Sprint(aid),
			Values: projections.ValuesOf("F", last, nil)}
	}
	const fID = 5000000
	apply(&projections.Batch{Writes: []projections.Write{film(fID)}})
	const rounds = 10
	// Through via: an actor moved to country C and C renamed at once. The
	// actor is in film F too, so the move's transaction waits at F after
	// refreshing X with C's old name; the rename's finds no actor of C
	// committed. Without the move's lock on C's state row, X keeps it.
	country := func(cid int, name string) projections.ChildWrite {
		return projections.ChildWrite{Join: 2, SourceKey: fmt.Sprint(cid), Version: next(), Link: projections.ValuesOf(cid), LinkKey: fmt.Sprint(cid),
			Values: projections.ValuesOf(name)}
	}
	for r := 1; r <= rounds; r++ {
		x, aid, cid := 2000+r, 300+r, 700+r
		apply(&projections.Batch{Writes: []projections.Write{film(x)}, ChildWrites: []projections.ChildWrite{cast(x, aid), cast(fID, aid), actor(aid, "L"), country(cid, "old")}})
		moved := actor(aid, "L")
		moved.Values = projections.ValuesOf("F", "L", cid)
		s.raceBehind(t, "SELECT film_id FROM film_with_actors WHERE film_id = ? FOR UPDATE", []any{fID},
			&projections.Batch{ChildWrites: []projections.ChildWrite{moved}}, &projections.Batch{ChildWrites: []projections.ChildWrite{country(cid, "new")}})
		if got := testbed.RowsText(t, s.sink.Shards[0].DB(), "SELECT JSON_VALUE(actors, '$[0].country') FROM film_with_actors WHERE film_id = ?", x); got != "new|\n" {
			t.Fatalf("via round %d: film X, its actor moved to a country beside the country's rename, shows country %q, want new", r, got)
		}
	}
	for r := 1; r <= rounds; r++ {
		x, aid := 1000+r, 100+r
		apply(&projections.Batch{Writes: []projections.Write{film(x)}, ChildWrites: []projections.ChildWrite{actor(aid, "old")}})
		add := &projections.Batch{ChildWrites: []projections.ChildWrite{cast(x, aid), cast(fID, 900000+r)}}
		rename := &projections.Batch{ChildWrites: []projections.ChildWrite{actor(aid, "new")}}
		s.raceBehind(t, "SELECT film_id FROM film_with_actors WHERE film_id = ? FOR UPDATE", []any{fID}, add, rename)
		if got := testbed.RowsText(t, s.sink.Shards[0].DB(), "SELECT JSON_VALUE(actors, '$[0].last_name') FROM film_with_actors WHERE film_id = ?", x); got != "new|\n" {
			t.Fatalf("round %d: film X, its cast row added beside its actor's rename, shows last name %q, want new", r, got)
		}
	}
	t.Logf("%d rounds: every cast row added beside its actor's rename shows the new name", rounds)
}
