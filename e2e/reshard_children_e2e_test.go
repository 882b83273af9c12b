package e2e

// readside reshard of a projection with children, with and without
// element joins: films with their crew (each element carrying its
// actor's names) and their tags, moved from two shards (-80, 80-) to
// three (-40, 40-c0, c0-) while the source changes and `readside run`
// applies the projection. 40-80 lands on the server of 80- (which keeps
// its child state, written by the live projector) and c0- on a server of
// its own (which gets the child state by copy).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

var reshardChildrenSchema = []string{
	"CREATE TABLE `%[1]s`.film (film_id INT PRIMARY KEY, category_id INT NULL)",
	"CREATE TABLE `%[1]s`.actor (actor_id INT PRIMARY KEY, first_name VARCHAR(30) CHARACTER SET utf8mb4 NOT NULL, last_name VARCHAR(30) CHARACTER SET utf8mb4 NOT NULL)",
	"CREATE TABLE `%[1]s`.crew_member (crew_id INT PRIMARY KEY, film_id INT NULL, actor_id INT NULL, role_name VARCHAR(30) CHARACTER SET utf8mb4 NOT NULL, KEY (film_id), KEY (actor_id))",
	"CREATE TABLE `%[1]s`.film_tag (tag_id INT PRIMARY KEY, film_id INT NULL, tag VARCHAR(30) CHARACTER SET utf8mb4 NOT NULL, KEY (film_id))",
}

const reshardChildrenProjection = `  film_crew:
    from: %[1]s.film
    sink: reads
    key: [film_id]
    shard_by: film_id
    columns: {film_id: film_id, category_id: category_id}
    children:
      crew:
        from: %[1]s.crew_member
        on: {film_id: film_id}
        columns: {crew_id: crew_id, role_name: role_name}
        join:
          - from: %[1]s.actor
            on: {actor_id: actor_id}
            columns: {first_name: first_name, last_name: last_name}
        order_by: [role_name]
      tags:
        from: %[1]s.film_tag
        on: {film_id: film_id}
        columns: {tag_id: tag_id, tag: tag}
        order_by: [tag]
`

// reshardChildrenExpected is film_crew computed on the source, and read
// over the union of the sink databases dbs (of distinct rows with
// distinct: a piece copied beside the old shard's rows before the cutover
// is a second copy of them).
func reshardChildrenExpected(src string, dbs []string, distinct bool) []struct{ name, want, got string } {
	q := func(t string) string { return "`" + src + "`." + t }
	crew := " FROM " + q("crew_member") + " c LEFT JOIN " + q("actor") + " a ON a.actor_id = c.actor_id WHERE c.film_id = f.film_id"
	tags := " FROM " + q("film_tag") + " t WHERE t.film_id = f.film_id"
	union := " UNION ALL "
	if distinct {
		union = " UNION "
	}
	var got []string
	for _, db := range dbs {
		got = append(got, "SELECT film_id, category_id, crew, crew_count, tags, tags_count FROM `"+db+"`.film_crew")
	}
	return []struct{ name, want, got string }{{"film_crew",
		"SELECT f.film_id, f.category_id, (SELECT JSON_ARRAYAGG(JSON_OBJECT('crew_id', c.crew_id, 'role_name', c.role_name, 'first_name', a.first_name, 'last_name', a.last_name)" +
			" ORDER BY c.role_name, c.crew_id)" + crew + "), (SELECT COUNT(*)" + crew + "), (SELECT JSON_ARRAYAGG(JSON_OBJECT('tag', t.tag, 'tag_id', t.tag_id) ORDER BY t.tag, t.tag_id)" +
			tags + "), (SELECT COUNT(*)" + tags + ") FROM " + q("film") + " f ORDER BY 1",
		strings.Join(got, union) + " ORDER BY 1"}}
}

// crewWorkload changes the films' children until target row changes
// have committed, pausing pause after each turn: crew rows and tags
// inserted, moved to another film, edited and deleted, actors renamed,
// deleted and inserted again, films recategorized, deleted and inserted
// again.
func crewWorkload(ctx context.Context, bed *testbed.Bed, src string, rng *rand.Rand, target int, pause time.Duration) error {
	q := func(t string) string { return "`" + src + "`." + t }
	names := []string{"Guiness", "Wahlberg", "Chase", "Davis", "Lollobrigida", "Nicholson", "Mostel", "Johansson"}
	roles := []string{"lead", "villain", "extra", "narrator", "cameo"}
	film := func() int { return 101 + rng.IntN(120) } // not the quiet films
	next := func(i int) (string, []any) {
		switch x := rng.IntN(100); {
		case x < 25:
			return "INSERT INTO " + q("crew_member") + " VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE film_id = VALUES(film_id), actor_id = VALUES(actor_id), role_name = VALUES(role_name)",
				[]any{1 + rng.IntN(500), film(), 1 + rng.IntN(15), roles[rng.IntN(len(roles))]}
		case x < 35:
			return "UPDATE " + q("crew_member") + " SET film_id = ? WHERE crew_id = ?", []any{film(), 1 + rng.IntN(500)}
		case x < 42:
			return "UPDATE " + q("crew_member") + " SET role_name = ? WHERE crew_id = ?", []any{roles[rng.IntN(len(roles))], 1 + rng.IntN(500)}
		case x < 50:
			return "DELETE FROM " + q("crew_member") + " WHERE crew_id = ?", []any{1 + rng.IntN(500)}
		case x < 62:
			return "INSERT INTO " + q("actor") + " VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE first_name = VALUES(first_name), last_name = VALUES(last_name)",
				[]any{1 + rng.IntN(15), fmt.Sprintf("First %d", i), names[rng.IntN(len(names))]}
		case x < 64:
			return "DELETE FROM " + q("actor") + " WHERE actor_id = ?", []any{1 + rng.IntN(15)}
		case x < 76:
			return "INSERT INTO " + q("film_tag") + " VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE film_id = VALUES(film_id), tag = VALUES(tag)",
				[]any{1 + rng.IntN(400), film(), fmt.Sprintf("tag%d", rng.IntN(30))}
		case x < 84:
			return "UPDATE " + q("film_tag") + " SET film_id = ? WHERE tag_id = ?", []any{film(), 1 + rng.IntN(400)}
		case x < 89:
			return "DELETE FROM " + q("film_tag") + " WHERE tag_id = ?", []any{1 + rng.IntN(400)}
		case x < 96:
			return "INSERT INTO " + q("film") + " VALUES (?, ?) ON DUPLICATE KEY UPDATE category_id = VALUES(category_id)", []any{film(), rng.IntN(16)}
		default:
			return "DELETE FROM " + q("film") + " WHERE film_id = ?", []any{film()}
		}
	}
	for done := 0; done < target && ctx.Err() == nil; {
		n, err := randomTxns(ctx, bed.MySQL.DB(), rng, min(40, target-done), 3, next)
		done += n
		if err != nil && ctx.Err() == nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
	return nil
}

// TestReshardChildrenKill9: film_crew (children with an element join, and
// children without) is resharded 2 → 3 shards under live writes — crew
// rows and tags inserted, moved between films, edited and deleted,
// actors renamed (every array they are in) — with the reshard SIGKILLed
// while filling and rerun to the end with --cleanup; the daemon follows
// the new sink; then the new shards' tables (their union) equal the
// source's JSON_ARRAYAGG, and readside verify says EQUAL.
func TestReshardChildrenKill9(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	src := sourceWithSchema(t, bed, "rschild", reshardChildrenSchema)
	// a0, a1: reads (-80, 80-); reads3 keeps -40 on a0 and 40-c0 on a1
	// (40-80 moves there) and puts c0- on b2, a server of its own (a
	// server is an address and a database).
	r := newShardedRun(t, bed, "rschild", "a0", "a1", "b2")
	dbs := r.dbs
	tables := []string{src + ".film", src + ".actor", src + ".crew_member", src + ".film_tag"}
	decl := fmt.Sprintf(reshardChildrenProjection, src)
	r.start(t, bed, tables, fmt.Sprintf("  reads:\n    shards:\n      - {keyrange: \"-80\", dsn: %q}\n      - {keyrange: \"80-\", dsn: %q}\n"+
		"  reads3:\n    shards:\n      - {keyrange: \"-40\", dsn: %q}\n      - {keyrange: \"40-c0\", dsn: %q}\n      - {keyrange: \"c0-\", dsn: %q}\n",
		r.dsn(bed, 0), r.dsn(bed, 1), r.dsn(bed, 0), r.dsn(bed, 1), r.dsn(bed, 2)), decl)
	head, cfgPath, logPath, d := r.head, r.cfgPath, r.logPath, r.d
	utc := utcDB(t, bed)
	// Films 1–40 are quiet (the workload changes films 101–220, crew rows
	// up to 500, tags up to 400 and actors 1–15): three crew rows of actor
	// 99 and two tags each; the copy reads them first (key order).
	var stmts []string
	for f := 1; f <= 220; f++ {
		if f <= 41 || f > 100 {
			stmts = append(stmts, fmt.Sprintf("INSERT INTO `%s`.film VALUES (%d, %d)", src, f, f%16))
		}
		if f <= 40 {
			for k := range 3 {
				stmts = append(stmts, fmt.Sprintf("INSERT INTO `%s`.crew_member VALUES (%d, %d, 99, 'role%d')", src, 1000+3*f+k, f, k))
			}
			for k := range 2 {
				stmts = append(stmts, fmt.Sprintf("INSERT INTO `%s`.film_tag VALUES (%d, %d, 'quiet%d')", src, 1000+2*f+k, f, k))
			}
		}
	}
	stmts = append(stmts, fmt.Sprintf("INSERT INTO `%s`.actor VALUES (99, 'Quiet', 'Actor')", src))
	if err := bed.MySQL.Exec(ctx, stmts...); err != nil {
		t.Fatal(err)
	}
	seed := seedFromEnv(t)
	if err := crewWorkload(ctx, bed, src, rand.New(rand.NewPCG(seed, 81)), 1500, 0); err != nil {
		t.Fatal(err)
	}
	waitExpected(t, utc, reshardChildrenExpected(src, dbs[:2], false), logPath)

	writing := func(stream uint64) (stop func()) {
		wctx, cancel := context.WithCancel(ctx)
		werr := make(chan error, 1)
		go func() {
			werr <- crewWorkload(wctx, bed, src, rand.New(rand.NewPCG(seed, stream)), 1_000_000, 20*time.Millisecond)
		}()
		return func() {
			cancel()
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
		}
	}
	stopWriting := writing(82)
	rb := &reshardBed{t: t, cfgPath: cfgPath}
	first := rb.startReshardOf("film_crew", "filling", "--chunk-rows", "10")
	rb.killAtPause(first, "filling")
	stopWriting()
	var phase string
	if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT phase FROM `"+dbs[2]+"`.`_readside_reshards` WHERE projection = 'film_crew'").Scan(&phase); err != nil || phase != "filling" {
		t.Fatalf("phase after the kill in filling = %q (%v), want filling\n%s", phase, err, first.out.String())
	}
	// While the reshard is down, the quiet films already copied to c0-
	// (a database of its own, where the child state comes by copy, after
	// the rows) lose their crew (to film 41) and their tags (to none);
	// nothing changes them after, so their arrays there are right only if
	// rebuilt from the state once copied: the catch-up re-applies these
	// moves onto state that has them already, which refreshes only the
	// new parents.
	var copied []int
	rows, err := bed.MySQL.DB().QueryContext(ctx, "SELECT film_id FROM `"+dbs[2]+"`.film_crew WHERE film_id <= 40 AND crew_count > 0")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var f int
		if err := rows.Scan(&f); err != nil {
			t.Fatal(err)
		}
		copied = append(copied, f)
	}
	rows.Close()
	if len(copied) == 0 {
		t.Fatalf("no quiet film was copied to c0- before the kill:\n%s", first.out.String())
	}
	t.Logf("quiet films copied to c0- before the kill: %v", copied)
	for _, f := range copied {
		if err := bed.MySQL.Exec(ctx, fmt.Sprintf("UPDATE `%s`.crew_member SET film_id = 41 WHERE film_id = %d", src, f),
			fmt.Sprintf("UPDATE `%s`.film_tag SET film_id = NULL WHERE film_id = %d", src, f)); err != nil {
			t.Fatal(err)
		}
	}
	waitExpected(t, utc, reshardChildrenExpected(src, dbs[:2], true), logPath)
	stopWriting = writing(83)
	last := rb.startReshardOf("film_crew", "", "--cleanup", "--chunk-rows", "20")
	select {
	case <-last.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the last reshard run did not finish:\n%s", last.out.String())
	}
	out := last.out.String()
	t.Logf("last reshard run:\n%s", out)
	if code := last.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(out, "film_crew now applies through sink reads3 (generation 1)") {
		t.Fatalf("reshard exit %d:\n%s", code, out)
	}
	// The live projector follows the new sink while the source changes.
	time.Sleep(2 * time.Second)
	stopWriting()
	waitExpected(t, utc, reshardChildrenExpected(src, dbs, false), logPath)
	if l, _ := os.ReadFile(logPath); !strings.Contains(string(l), "projection film_crew follows routing generation 1 on sink reads3") {
		t.Errorf("the daemon did not say it follows generation 1 on reads3; log:\n%s", tail(logPath))
	}
	if code := d.stop(30 * time.Second); code != 0 {
		t.Errorf("readside run exit %d; log:\n%s", code, tail(logPath))
	}
	// The config names the new sink, as the reshard says to do.
	if err := os.WriteFile(cfgPath, []byte(head+strings.Replace(decl, "    sink: reads\n", "    sink: reads3\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	expectReadside(t, cfgPath, "after the reshard", "verify", 0, "film_crew: EQUAL")
}
