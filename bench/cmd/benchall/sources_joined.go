package main

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/readside/readside/bench/internal/benchio"
	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// The read models of issue 44 whose state reaches through a join: an
// aggregate grouped by a joined parent's column, and children whose
// elements carry a joined parent's columns. Everything is written in the
// backlog (no preload), parents first, so that the projector knows every
// parent its rows point at.

// storeRevenueSource is revenue per store (store_revenue): payments
// grouped by the store of the staff member who took them (payment.staff_id
// → staff.store_id, a group column from a joined parent). The backlog:
// 200 staff over 20 stores first, then 50% new payments, 32% updates of a
// payment's amount, 8% payments moved to another staff member, 8%
// deletes and 2% staff moves to another store (each regroups every
// payment the staff member took). Its B2 is rawupsert -aggregate with
// the contributions and their links, the staff state and the regroup
// (bench/rawupsert/aggregate_joined.go).
func (e *env) storeRevenueSource(ctx context.Context, w workload, prefix string, s *source) error {
	const staffN, stores = 200, 20
	src := "`" + e.srcDB + "`."
	if err := e.bed.MySQL.Exec(ctx,
		"CREATE TABLE "+src+"srv_staff (id INT PRIMARY KEY, store_id INT NOT NULL, name VARCHAR(40) NOT NULL, commit_us BIGINT NOT NULL)",
		"CREATE TABLE "+src+"srv_payments (id BIGINT PRIMARY KEY, staff_id INT NOT NULL, amount_cents BIGINT NOT NULL, paid_at DATETIME(6) NOT NULL, commit_us BIGINT NOT NULL, KEY (staff_id))"); err != nil {
		return err
	}
	tables := []string{"srv_staff", "srv_payments"}
	var err error
	if s.cfgPath, err = e.customConfig(prefix, tables, `  store_revenue:
    from: $src.srv_payments
    sink: reads
    table: r_store_revenue
    join:
      - {from: $src.srv_staff, on: {id: staff_id}, columns: {store_id: store_id}}
    group_by: [store_id]
    aggregates: {payments: "count(*)", revenue_cents: "sum(amount_cents)", last_paid_at: "max(paid_at)",
                 last_commit_us: "max(commit_us)"}
`); err != nil {
		return err
	}
	rnd := rand.New(rand.NewPCG(seed, uint64(len(w.Name))))
	// staffOf[id] is payment id's staff member; live lists the payments
	// that exist, pos[id] a payment's place in it.
	staffOf := []int32{0} // ids start at 1
	var live []int64
	pos := map[int64]int{}
	remove := func(id int64) {
		i := pos[id]
		last := live[len(live)-1]
		live[i], pos[last] = last, i
		live = live[:len(live)-1]
		delete(pos, id)
	}
	ut := []upsertTable{
		{head: "INSERT INTO " + src + "srv_staff (id, store_id, name, commit_us) VALUES ",
			tail: " ON DUPLICATE KEY UPDATE store_id=VALUES(store_id), commit_us=VALUES(commit_us)",
			row: func(b []byte, id, us int64) []byte {
				return fmt.Appendf(b, "(%d,%d,'staff %d',%d)", id, 1+rnd.IntN(stores), id, us)
			}},
		{head: "INSERT INTO " + src + "srv_payments (id, staff_id, amount_cents, paid_at, commit_us) VALUES ",
			tail: " ON DUPLICATE KEY UPDATE staff_id=VALUES(staff_id), amount_cents=VALUES(amount_cents), commit_us=VALUES(commit_us)",
			row: func(b []byte, id, us int64) []byte {
				return fmt.Appendf(b, "(%d,%d,%d,'2026-01-01' + INTERVAL %d SECOND,%d)", id, staffOf[id], 100+rnd.IntN(100_000), id*60, us)
			}},
		{head: "DELETE FROM " + src + "srv_payments WHERE id IN (", tail: ")",
			row: func(b []byte, id, _ int64) []byte { return fmt.Appendf(b, "%d", id) }},
	}
	staffWritten := int64(0)
	// touched keeps a row to one change per source transaction: a second
	// upsert of the same values would log no row event.
	var touched map[[2]int64]bool
	once := func(batch *upsertBatch, table int, id, us int64) {
		if !touched[[2]int64{int64(table), id}] {
			touched[[2]int64{int64(table), id}] = true
			batch.add(table, id, us)
		}
	}
	pick := func(batch *upsertBatch, us int64) {
		if batch.empty() {
			touched = map[[2]int64]bool{}
		}
		if staffWritten < staffN {
			staffWritten++
			once(batch, 0, staffWritten, us)
			return
		}
		p := rnd.Float64()
		if p < 0.5 || len(live) < 100 {
			staffOf = append(staffOf, int32(1+rnd.IntN(staffN)))
			id := int64(len(staffOf) - 1)
			pos[id] = len(live)
			live = append(live, id)
			once(batch, 1, id, us)
			return
		}
		id := live[rnd.IntN(len(live))]
		if touched[[2]int64{1, id}] || touched[[2]int64{2, id}] {
			return
		}
		switch {
		case p < 0.82: // amount
		case p < 0.90:
			staffOf[id] = int32(1 + rnd.IntN(staffN))
		case p < 0.98:
			remove(id)
			once(batch, 2, id, us)
			return
		default:
			once(batch, 0, int64(1+rnd.IntN(staffN)), us)
			return
		}
		once(batch, 1, id, us)
	}
	db := e.bed.MySQL.DB()
	s.b2 = []string{"-aggregate"}
	s.write = func(ctx context.Context) (map[string]int, error) {
		counts, err := upsertBacklog(ctx, db, w, ut, pick)
		if err != nil {
			return nil, fmt.Errorf("writing the backlog of %s: %w", w.Name, err)
		}
		return map[string]int{s.proj.Topic: counts[1] + counts[2], event.TopicFor(s.cfg.Kafka.TopicPrefix, e.srcDB, "srv_staff"): counts[0]}, nil
	}
	return nil
}

// filmCastSource is a film with its cast by name (film_cast): films, each
// read row carrying its film_actor rows as a JSON array whose elements
// carry the actor's names (children with a join, ordered by last name).
// The backlog: 500 actors first, then 30% new films with 3–8 cast rows,
// 25% cast rows added to a film, 15% cast rows deleted, 20% film title
// changes and 10% actor renames (each refreshes every array the actor is
// in). Its B2 is rawupsert -joins of a plain copy of film_actor joined to
// the actors: the child state, the parent state and a parent's fan-out
// (b2Config), whose rows are checksummed against the projector's arrays
// unnested (filmCastCheck).
func (e *env) filmCastSource(ctx context.Context, w workload, prefix string, s *source) error {
	const actors = 500
	src := "`" + e.srcDB + "`."
	if err := e.bed.MySQL.Exec(ctx,
		"CREATE TABLE "+src+"fc_actors (id INT PRIMARY KEY, first_name VARCHAR(45) NOT NULL, last_name VARCHAR(45) NOT NULL, commit_us BIGINT NOT NULL)",
		"CREATE TABLE "+src+"fc_films (id BIGINT PRIMARY KEY, title VARCHAR(100) NOT NULL, commit_us BIGINT NOT NULL)",
		"CREATE TABLE "+src+"fc_film_actor (id BIGINT PRIMARY KEY, film_id BIGINT NOT NULL, actor_id INT NOT NULL, commit_us BIGINT NOT NULL, KEY (film_id), KEY (actor_id))"); err != nil {
		return err
	}
	tables := []string{"fc_films", "fc_film_actor", "fc_actors"}
	var err error
	const filmCast = `  film_cast:
    from: $src.fc_films
    sink: reads
    table: r_film_cast
    key: [id]
    columns: {id: id, title: title, commit_us: commit_us}
    children:
      actors:
        from: $src.fc_film_actor
        on: {film_id: id}
        columns: {actor_id: actor_id}
        join:
          - from: $src.fc_actors
            on: {id: actor_id}
            columns: {first_name: first_name, last_name: last_name}
        order_by: [last_name]
        limit: 100
`
	if s.cfgPath, err = e.customConfig(prefix, tables, filmCast); err != nil {
		return err
	}
	// B2's config holds the read model too: -arrays writes its read rows.
	b2, err := e.b2Config(prefix, tables, filmCast+`  fc_cast_b2:
    from: $src.fc_film_actor
    sink: reads
    table: r_fc_cast_b2
    key: [id]
    columns: {id: id, film_id: film_id, actor_id: actor_id}
    join:
      - from: $src.fc_actors
        on: {id: actor_id}
        columns: {first_name: first_name, last_name: last_name}
`)
	if err != nil {
		return err
	}
	s.b2 = []string{"-joins", "-arrays", "film_cast", "-config", b2, "-projection", "fc_cast_b2", "-checksum", "film_id,actor_id,first_name,last_name"}
	s.b2Check = e.filmCastCheck

	rnd := rand.New(rand.NewPCG(seed, uint64(len(w.Name))))
	names := []string{"GUINESS", "WAHLBERG", "CHASE", "DAVIS", "LOLLOBRIGIDA", "NICHOLSON", "MOSTEL", "JOHANSSON", "SWANK", "GABLE"}
	// castFilm[id] is cast row id's film; cast lists the rows that exist,
	// at[id] a row's place in it; films is the highest film id.
	castFilm := []int64{0} // ids start at 1
	var cast []int64
	at := map[int64]int{}
	var films, renames int64
	addCast := func(film int64) int64 {
		castFilm = append(castFilm, film)
		id := int64(len(castFilm) - 1)
		at[id] = len(cast)
		cast = append(cast, id)
		return id
	}
	ut := []upsertTable{
		{head: "INSERT INTO " + src + "fc_actors (id, first_name, last_name, commit_us) VALUES ",
			tail: " ON DUPLICATE KEY UPDATE first_name=VALUES(first_name), last_name=VALUES(last_name), commit_us=VALUES(commit_us)",
			row: func(b []byte, id, us int64) []byte {
				renames++
				return fmt.Appendf(b, "(%d,'FIRST%d','%s %d',%d)", id, renames, names[rnd.IntN(len(names))], renames, us)
			}},
		{head: "INSERT INTO " + src + "fc_films (id, title, commit_us) VALUES ",
			tail: " ON DUPLICATE KEY UPDATE title=VALUES(title), commit_us=VALUES(commit_us)",
			row: func(b []byte, id, us int64) []byte {
				return fmt.Appendf(b, "(%d,'FILM %d %d',%d)", id, id, rnd.IntN(1_000_000), us)
			}},
		{head: "INSERT INTO " + src + "fc_film_actor (id, film_id, actor_id, commit_us) VALUES ",
			tail: "",
			row: func(b []byte, id, us int64) []byte {
				return fmt.Appendf(b, "(%d,%d,%d,%d)", id, castFilm[id], 1+rnd.IntN(actors), us)
			}},
		{head: "DELETE FROM " + src + "fc_film_actor WHERE id IN (", tail: ")",
			row: func(b []byte, id, _ int64) []byte { return fmt.Appendf(b, "%d", id) }},
	}
	actorsWritten := int64(0)
	var touched map[[2]int64]bool
	once := func(batch *upsertBatch, table int, id, us int64) {
		if !touched[[2]int64{int64(table), id}] {
			touched[[2]int64{int64(table), id}] = true
			batch.add(table, id, us)
		}
	}
	pick := func(batch *upsertBatch, us int64) {
		if batch.empty() {
			touched = map[[2]int64]bool{}
		}
		if actorsWritten < actors {
			actorsWritten++
			once(batch, 0, actorsWritten, us)
			return
		}
		p := rnd.Float64()
		if p < 0.3 || len(cast) < 100 {
			films++
			once(batch, 1, films, us)
			for range 3 + rnd.IntN(6) {
				batch.add(2, addCast(films), us)
			}
			return
		}
		switch {
		case p < 0.55:
			batch.add(2, addCast(1+rnd.Int64N(films)), us)
		case p < 0.7:
			id := cast[rnd.IntN(len(cast))]
			if touched[[2]int64{2, id}] {
				return
			}
			i, last := at[id], cast[len(cast)-1]
			cast[i], at[last] = last, i
			cast = cast[:len(cast)-1]
			delete(at, id)
			once(batch, 3, id, us)
		case p < 0.9:
			once(batch, 1, 1+rnd.Int64N(films), us)
		default:
			once(batch, 0, 1+rnd.Int64N(actors), us)
		}
	}
	db := e.bed.MySQL.DB()
	s.write = func(ctx context.Context) (map[string]int, error) {
		counts, err := upsertBacklog(ctx, db, w, ut, pick)
		if err != nil {
			return nil, fmt.Errorf("writing the backlog of %s: %w", w.Name, err)
		}
		prefix := s.cfg.Kafka.TopicPrefix
		return map[string]int{s.proj.Topic: counts[1], event.TopicFor(prefix, e.srcDB, "fc_film_actor"): counts[2] + counts[3],
			event.TopicFor(prefix, e.srcDB, "fc_actors"): counts[0]}, nil
	}
	return nil
}

// filmCastCheck compares the projector's arrays, unnested (one row per
// element, with its film), with the rows B2 left: the same checksum means
// every element carries the name its actor has last.
func (e *env) filmCastCheck(ctx context.Context, proj *projections.Projection, b2 limitResult) (string, error) {
	from := fmt.Sprintf("`%s` r, JSON_TABLE(r.actors, '$[*]' COLUMNS (actor_id BIGINT PATH '$.actor_id', first_name VARCHAR(45) PATH '$.first_name', last_name VARCHAR(45) PATH '$.last_name')) j", proj.Table)
	rows, sum, err := benchio.QueryChecksum(ctx, e.sink.DB(), from, []string{"r.id", "j.actor_id", "j.first_name", "j.last_name"})
	if err != nil {
		return "", err
	}
	aRows, aSum, err := benchio.ChildrenChecksum(ctx, e.sink.DB(), proj.Table, []string{"id", "title", "commit_us", "actors", "actors_count"}, "actors")
	if err != nil {
		return "", err
	}
	if rows == b2.ReadRows && sum == b2.Checksum && aRows == b2.ArrayRows && aSum == b2.ArrayChecksum {
		return fmt.Sprintf("same elements as B2's rows: %d, checksum %d; same read rows as B2's arrays: %d, checksum %d", rows, sum, aRows, aSum), nil
	}
	msg := fmt.Sprintf("DIFFERENT: the projector's arrays hold %d elements (checksum %d), B2 left %d rows (checksum %d); the projector's read rows %d (checksum %d), B2's %d (checksum %d)",
		rows, sum, b2.ReadRows, b2.Checksum, aRows, aSum, b2.ArrayRows, b2.ArrayChecksum)
	logf("warning: %s: %s", proj.Name, msg)
	return msg, nil
}
