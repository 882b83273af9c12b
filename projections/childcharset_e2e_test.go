package projections_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projections"
	"github.com/readside/readside/projector"
	"github.com/readside/readside/verify"
)

// TestChildrenMembersInOtherCharsets: a children array whose members are
// text in character sets other than utf8mb4 — two single-byte sets
// (latin1, cp1251) side by side, ucs2, and a joined parent's utf16le and
// utf32 columns. MariaDB's own JSON_OBJECT refuses latin1 next to cp1251
// ("Illegal mix of collations") and JSON_ARRAYAGG garbles objects of
// UTF-16/32 text into bytes a utf8mb4 column refuses, so the array is
// defined over the members' text converted to utf8mb4 (the same
// characters). The read table must hold exactly that, decode to the
// strings written, and verify (of the projection compiled afresh, as the
// command does) must call it equal.
func TestChildrenMembersInOtherCharsets(t *testing.T) {
	bed := testbed.Get(t)
	ctx := t.Context()
	s := newTablesShop(t, bed, "ccs", []string{"film", "film_actor", "actor"},
		"CREATE TABLE `%s`.film (film_id INT PRIMARY KEY, title VARCHAR(40) CHARACTER SET utf32 NOT NULL)",
		"CREATE TABLE `%s`.film_actor (film_id INT NOT NULL, actor_id INT NOT NULL, role VARCHAR(20) CHARACTER SET cp1251 NULL,"+
			" note VARCHAR(20) CHARACTER SET ucs2 NULL, tag VARCHAR(20) CHARACTER SET latin1 NULL, PRIMARY KEY (film_id, actor_id))",
		"CREATE TABLE `%s`.actor (actor_id INT PRIMARY KEY, first_name VARCHAR(30) CHARACTER SET utf16le NOT NULL,"+
			" last_name VARCHAR(30) CHARACTER SET latin1 NOT NULL, nick VARCHAR(30) CHARACTER SET utf32 NULL)")
	s.cfg.Projections = map[string]config.Projection{"film_cast_cs": {
		From: s.src + ".film", Sink: "reads", Key: []string{"film_id"},
		Columns: map[string]string{"film_id": "film_id", "title": "title"},
		Children: map[string]config.Children{"actors": {
			From: s.src + ".film_actor", On: map[string]string{"film_id": "film_id"},
			Columns: map[string]string{"actor_id": "actor_id", "role": "role", "note": "note", "tag": "tag"},
			Join: []config.Join{{From: s.src + ".actor", On: map[string]string{"actor_id": "actor_id"},
				Columns: map[string]string{"first_name": "first_name", "last_name": "last_name", "nick": "nick"}}},
			OrderBy: []string{"last_name"},
		}},
	}}
	s.openSink(t, "-")
	if !s.p.Children[0].UTF8Member("first_name") || !s.p.Children[0].UTF8Member("role") || s.p.Children[0].UTF8Member("actor_id") {
		t.Fatal("the members' character sets were not learnt from the source schema")
	}
	tl := runTailer(t, bed, s.cfg)
	stop := startProjector(t, s.p, s.sink, s.cfg.Kafka.Brokers)
	defer stop()

	type actor struct{ first, last, nick string }
	actors := map[int]actor{
		1: {"Zoë 😀", "Müller", "𝄞 clef"},
		2: {"Анна", "Ärger", ""},
		3: {"李", "Adams", "ǅemal"},
	}
	for id, a := range actors {
		var nick any = a.nick
		if a.nick == "" {
			nick = nil
		}
		s.exec(t, "INSERT INTO $.actor VALUES (?, ?, ?, ?)", id, a.first, a.last, nick)
	}
	s.exec(t, "INSERT INTO $.film VALUES (1, 'Ωmega 🎬'), (2, 'Plain')")
	s.exec(t, "INSERT INTO $.film_actor VALUES (1, 1, 'роль', 'ünï', 'café'), (1, 2, NULL, 'Ωx', 'ß'), (1, 3, 'lead', NULL, NULL), (2, 2, 'ё', 'a', 'b')")
	want := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), fmt.Sprintf("SELECT f.film_id, CONVERT(f.title USING utf8mb4),"+
			" (SELECT JSON_ARRAYAGG(JSON_OBJECT('actor_id', fa.actor_id, 'note', CONVERT(fa.note USING utf8mb4), 'role', CONVERT(fa.role USING utf8mb4),"+
			" 'tag', CONVERT(fa.tag USING utf8mb4), 'first_name', CONVERT(a.first_name USING utf8mb4), 'last_name', CONVERT(a.last_name USING utf8mb4),"+
			" 'nick', CONVERT(a.nick USING utf8mb4)) ORDER BY a.last_name, fa.film_id, fa.actor_id)"+
			" FROM `%[1]s`.film_actor fa LEFT JOIN `%[1]s`.actor a ON a.actor_id = fa.actor_id WHERE fa.film_id = f.film_id)"+
			" FROM `%[1]s`.film f ORDER BY 1", s.src))
	}
	got := func() string {
		return testbed.RowsText(t, bed.MySQL.DB(), "SELECT film_id, CONVERT(title USING utf8mb4), actors FROM `"+s.shards[0]+"`.film_cast_cs ORDER BY 1")
	}
	converge := func(step string) {
		t.Helper()
		testbed.Eventually(t, 60*time.Second, func() (bool, string) {
			w, g := want(), got()
			return w == g, fmt.Sprintf("%s: the read table differs from the array over the members in utf8mb4:\nwant:\n%s\ngot:\n%s", step, w, g)
		})
	}
	converge("first load")

	// The array decodes to the very strings written, in last_name order
	// under latin1_swedish_ci (A < M < Ä).
	var text string
	if err := bed.MySQL.DB().QueryRowContext(ctx, "SELECT actors FROM `"+s.shards[0]+"`.film_cast_cs WHERE film_id = 1").Scan(&text); err != nil {
		t.Fatal(err)
	}
	var elems []struct {
		ActorID   int     `json:"actor_id"`
		Role      *string `json:"role"`
		Note      *string `json:"note"`
		Tag       *string `json:"tag"`
		FirstName string  `json:"first_name"`
		LastName  string  `json:"last_name"`
		Nick      *string `json:"nick"`
	}
	if err := json.Unmarshal([]byte(text), &elems); err != nil {
		t.Fatalf("film 1's array is no JSON: %v\n%s", err, text)
	}
	var order []int
	for _, e := range elems {
		order = append(order, e.ActorID)
		a := actors[e.ActorID]
		if e.FirstName != a.first || e.LastName != a.last {
			t.Errorf("actor %d in the array: %q %q, written %q %q", e.ActorID, e.FirstName, e.LastName, a.first, a.last)
		}
	}
	if fmt.Sprint(order) != "[3 1 2]" || elems[1].Role == nil || *elems[1].Role != "роль" || *elems[1].Note != "ünï" || *elems[1].Tag != "café" || *elems[1].Nick != "𝄞 clef" {
		t.Fatalf("film 1's array: %s", text)
	}

	// A rename in utf16le and latin1 reorders every array the actor is in.
	s.exec(t, "UPDATE $.actor SET first_name = 'Ådam 𝒜', last_name = 'Aaberg' WHERE actor_id = 2")
	s.exec(t, "UPDATE $.film_actor SET note = 'Ω2', role = 'жёлтый' WHERE film_id = 2")
	converge("an actor renamed, a cast row changed")
	if !strings.Contains(got(), `"first_name": "Ådam 𝒜"`) {
		t.Fatalf("the rename is not in the arrays:\n%s", got())
	}
	waitPublished(t, bed, tl)

	vsrc, err := verify.OpenSource(s.cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer vsrc.Close()
	// Compiled afresh, as readside verify does: nothing learnt from the
	// source schema by the projector's copy.
	fresh, err := projections.Compile(s.cfg)
	if err != nil || len(fresh) != 1 {
		t.Fatalf("compiling the projection again: %v", err)
	}
	rep, err := verify.New(fresh[0], vsrc, s.sink, verify.Options{Settle: 5 * time.Second, Ends: projector.Ends(s.cfg.Kafka.Brokers), Log: slog.New(slog.DiscardHandler)}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Drift() != 0 || rep.Unsettled != 0 || rep.SourceRows != 2 {
		var b strings.Builder
		rep.WriteText(&b)
		t.Fatalf("verify: drift %d, unsettled %d, source rows %d:\n%s", rep.Drift(), rep.Unsettled, rep.SourceRows, b.String())
	}
}
