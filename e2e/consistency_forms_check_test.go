package e2e

// The rental shop's snapshot check (formsProjections): issue 44's forms on
// a transaction-consistent sink, each read model compared, in the one
// snapshot, with the copies of the rows it is computed from. Every source
// transaction also keeps three counts constant (staff per store, stores
// per region, the actors' names), so a copy showing part of one is seen
// on its own.

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

type formsPayment struct {
	staff, customer, amount int64
}

type formsName struct {
	first, last sql.NullString
}

// formsActor is one element of a film's cast array.
type formsActor struct {
	ActorID   int64   `json:"actor_id"`
	FirstName *string `json:"first_name"`
	LastName  *string `json:"last_name"`
}

type formsCast struct {
	title  string
	actors []formsActor // nil: the array column is NULL
	count  int64
}

// formsGroup is one aggregate row: revenue, payments (count(*), -1 where
// the projection has none) and distinct customers.
type formsGroup struct {
	revenue, payments, customers int64
}

// formsSnapshot is what one reader transaction saw of the rental shop.
type formsSnapshot struct {
	stores   map[int64]sql.NullInt64 // store_id → region_id
	staff    map[int64]sql.NullInt64 // staff_id → store_id
	payments map[int64]formsPayment
	actors   map[int64]formsName
	roles    map[[2]int64]bool // (film_id, actor_id) of film_actor's copy
	byStore  map[int64]formsGroup
	byRegion map[int64]formsGroup
	films    map[int64]formsCast
}

// formsOpening are the counts every source transaction of the rental
// shop keeps: staff per store, stores per region, and how many actors
// carry each name (names are only swapped between actors).
type formsOpening struct {
	staffPerStore, storesPerRegion map[int64]int
	names                          map[formsName]int
}

// violations lists each invariant the snapshot breaks, each "kind: sample".
func (s formsSnapshot) violations(open formsOpening) []string {
	var v violationList
	headcount := map[int64]int{}
	for _, st := range s.staff {
		if st.Valid {
			headcount[st.Int64]++
		}
	}
	if !maps.Equal(headcount, open.staffPerStore) {
		v.add("staff", "staff per store %v, every transaction keeps %v", headcount, open.staffPerStore)
	}
	perRegion := map[int64]int{}
	for _, r := range s.stores {
		if r.Valid {
			perRegion[r.Int64]++
		}
	}
	if !maps.Equal(perRegion, open.storesPerRegion) {
		v.add("stores", "stores per region %v, every transaction keeps %v", perRegion, open.storesPerRegion)
	}
	names := map[formsName]int{}
	for _, n := range s.actors {
		names[n]++
	}
	if !maps.Equal(names, open.names) {
		v.add("actors", "the actors carry names %v, every transaction keeps %v", names, open.names)
	}

	// The aggregates as the copies of the payments, the staff and the
	// stores say they are: a payment whose staff member (or store) is
	// missing or NULL is in no group.
	type acc struct {
		revenue, payments int64
		customers         map[int64]bool
	}
	store, region := map[int64]*acc{}, map[int64]*acc{}
	add := func(groups map[int64]*acc, g int64, p formsPayment) {
		a := groups[g]
		if a == nil {
			a = &acc{customers: map[int64]bool{}}
			groups[g] = a
		}
		a.revenue += p.amount
		a.payments++
		a.customers[p.customer] = true
	}
	for _, id := range sortedKeys(s.payments) {
		p := s.payments[id]
		st, ok := s.staff[p.staff]
		if !ok || !st.Valid {
			continue
		}
		add(store, st.Int64, p)
		if r, ok := s.stores[st.Int64]; ok && r.Valid {
			add(region, r.Int64, p)
		}
	}
	compare := func(kind, by string, want map[int64]*acc, got map[int64]formsGroup, counted bool) {
		for _, g := range sortedKeys(want) {
			w := formsGroup{want[g].revenue, want[g].payments, int64(len(want[g].customers))}
			if !counted {
				w.payments = -1
			}
			if a, ok := got[g]; !ok {
				v.add(kind, "%s %d: the copies hold %+v, the aggregate has no row", by, g, w)
			} else if a != w {
				v.add(kind, "%s %d: the copies hold %+v, the aggregate says %+v", by, g, w, a)
			}
		}
		for _, g := range sortedKeys(got) {
			if _, ok := want[g]; !ok {
				v.add(kind, "%s %d: the aggregate says %+v, the copies hold no payment of it", by, g, got[g])
			}
		}
	}
	compare("store revenue", "store", store, s.byStore, true)
	compare("region revenue", "region", region, s.byRegion, false)

	// Each film's cast array as the copies of film_actor and the actors
	// say it is: ordered by last name (NULL first), ties by the child's
	// key (film_id, actor_id).
	cast := map[int64][]formsActor{}
	for pair := range s.roles {
		if _, ok := s.films[pair[0]]; !ok {
			v.add("cast", "film_actor (%d, %d) of a film the cast table lacks", pair[0], pair[1])
			continue
		}
		n := s.actors[pair[1]]
		cast[pair[0]] = append(cast[pair[0]], formsActor{ActorID: pair[1], FirstName: nullString(n.first), LastName: nullString(n.last)})
	}
	for _, f := range sortedKeys(s.films) {
		want, got := cast[f], s.films[f]
		slices.SortFunc(want, byLastName)
		if got.count != int64(len(want)) || !slices.EqualFunc(got.actors, want, sameActor) || (len(want) == 0) != (got.actors == nil) {
			v.add("cast", "film %d: film_actor and the actors' copies give %s, the cast array is %s (count %d)", f, castText(want), castText(got.actors), got.count)
		}
	}
	return v.list()
}

// byLastName is the cast arrays' order: last name, NULL first (the
// names are ASCII in one case, so byte order is the collation's), ties by
// the child's key (film_id, actor_id; one film: actor_id).
func byLastName(a, b formsActor) int {
	switch {
	case a.LastName == nil && b.LastName != nil:
		return -1
	case a.LastName != nil && b.LastName == nil:
		return 1
	}
	if c := cmp.Compare(textOr(a.LastName), textOr(b.LastName)); c != 0 {
		return c
	}
	return cmp.Compare(a.ActorID, b.ActorID)
}

func nullString(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

func textOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func sameActor(a, b formsActor) bool {
	return a.ActorID == b.ActorID && textOr(a.FirstName) == textOr(b.FirstName) && textOr(a.LastName) == textOr(b.LastName) &&
		(a.FirstName == nil) == (b.FirstName == nil) && (a.LastName == nil) == (b.LastName == nil)
}

func castText(as []formsActor) string {
	if as == nil {
		return "NULL"
	}
	parts := make([]string, 0, len(as))
	for _, a := range as {
		parts = append(parts, fmt.Sprintf("%d %s %s", a.ActorID, textOr(a.FirstName), textOr(a.LastName)))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// checkForms is the rental shop's snapshot check.
func checkForms(open formsOpening) snapshotCheck {
	return func(ctx context.Context, conn *sql.Conn, db string) ([]string, error) {
		s, err := readForms(ctx, conn, db)
		if err != nil {
			return nil, err
		}
		return s.violations(open), nil
	}
}

// readForms reads every read table of the rental shop in database db, in
// the snapshot open on conn.
func readForms(ctx context.Context, conn *sql.Conn, db string) (formsSnapshot, error) {
	s := formsSnapshot{stores: map[int64]sql.NullInt64{}, staff: map[int64]sql.NullInt64{}, payments: map[int64]formsPayment{},
		actors: map[int64]formsName{}, roles: map[[2]int64]bool{}, byStore: map[int64]formsGroup{}, byRegion: map[int64]formsGroup{},
		films: map[int64]formsCast{}}
	reads := []struct {
		table, cols string
		scan        func(*sql.Rows) error
	}{
		{"store_copy", "store_id, region_id", func(r *sql.Rows) error {
			var id int64
			var region sql.NullInt64
			err := r.Scan(&id, &region)
			s.stores[id] = region
			return err
		}},
		{"staff_copy", "staff_id, store_id", func(r *sql.Rows) error {
			var id int64
			var store sql.NullInt64
			err := r.Scan(&id, &store)
			s.staff[id] = store
			return err
		}},
		{"pay_copy", "payment_id, staff_id, customer_id, amount", func(r *sql.Rows) error {
			var id int64
			var p formsPayment
			err := r.Scan(&id, &p.staff, &p.customer, &p.amount)
			s.payments[id] = p
			return err
		}},
		{"actor_copy", "actor_id, first_name, last_name", func(r *sql.Rows) error {
			var id int64
			var n formsName
			err := r.Scan(&id, &n.first, &n.last)
			s.actors[id] = n
			return err
		}},
		{"cast_copy", "film_id, actor_id", func(r *sql.Rows) error {
			var pair [2]int64
			err := r.Scan(&pair[0], &pair[1])
			s.roles[pair] = true
			return err
		}},
		{"store_revenue", "store_id, revenue, payments, customers", func(r *sql.Rows) error {
			var id int64
			var g formsGroup
			err := r.Scan(&id, &g.revenue, &g.payments, &g.customers)
			s.byStore[id] = g
			return err
		}},
		{"region_revenue", "region_id, revenue, customers", func(r *sql.Rows) error {
			var id int64
			g := formsGroup{payments: -1}
			err := r.Scan(&id, &g.revenue, &g.customers)
			s.byRegion[id] = g
			return err
		}},
		{"film_cast", "film_id, title, actors, actors_count", func(r *sql.Rows) error {
			var id int64
			var c formsCast
			var arr sql.NullString
			if err := r.Scan(&id, &c.title, &arr, &c.count); err != nil {
				return err
			}
			if arr.Valid {
				if err := json.Unmarshal([]byte(arr.String), &c.actors); err != nil {
					return fmt.Errorf("film %d's actors %q: %w", id, arr.String, err)
				}
				if c.actors == nil {
					c.actors = []formsActor{}
				}
			}
			s.films[id] = c
			return nil
		}},
	}
	for _, rd := range reads {
		if err := scanSnapshot(ctx, conn, db, rd.table, rd.cols, rd.scan); err != nil {
			return s, err
		}
	}
	return s, nil
}

// TestFormsViolations: the rental shop's check decides whether issue 44's
// forms keep issue 42's guarantee, so each torn state it exists to see
// must be reported under its kind, and a state the source could have had
// must not be.
func TestFormsViolations(t *testing.T) {
	str := func(s string) sql.NullString { return sql.NullString{String: s, Valid: true} }
	id := func(n int64) sql.NullInt64 { return sql.NullInt64{Int64: n, Valid: true} }
	ptr := func(s string) *string { return &s }
	open := formsOpening{staffPerStore: map[int64]int{1: 1, 2: 1}, storesPerRegion: map[int64]int{7: 2},
		names: map[formsName]int{{str("Ann"), str("Lee")}: 1, {str("Bo"), str("Kim")}: 1}}
	whole := func() formsSnapshot {
		return formsSnapshot{
			stores:   map[int64]sql.NullInt64{1: id(7), 2: id(7)},
			staff:    map[int64]sql.NullInt64{10: id(1), 11: id(2)},
			payments: map[int64]formsPayment{100: {staff: 10, customer: 5, amount: 30}, 101: {staff: 10, customer: 5, amount: 12}, 102: {staff: 11, customer: 6, amount: 4}},
			actors:   map[int64]formsName{20: {str("Ann"), str("Lee")}, 21: {str("Bo"), str("Kim")}},
			roles:    map[[2]int64]bool{{50, 20}: true, {50, 21}: true},
			byStore:  map[int64]formsGroup{1: {42, 2, 1}, 2: {4, 1, 1}},
			byRegion: map[int64]formsGroup{7: {46, -1, 2}},
			films: map[int64]formsCast{
				50: {title: "Heat", count: 2, actors: []formsActor{{21, ptr("Bo"), ptr("Kim")}, {20, ptr("Ann"), ptr("Lee")}}},
				51: {title: "Ran"},
			},
		}
	}
	cases := []struct {
		why  string
		edit func(*formsSnapshot)
		kind string // "" when the state is one the source had
	}{
		{"a state every transaction kept whole passes", func(*formsSnapshot) {}, ""},
		{"a staff swap with one side applied breaks the headcount", func(s *formsSnapshot) { s.staff[11] = id(1) }, "staff"},
		{"a store's region swap half applied", func(s *formsSnapshot) { s.stores[2] = id(8) }, "stores"},
		{"an actor rename half applied", func(s *formsSnapshot) { s.actors[21] = formsName{str("Bo"), str("Lee")} }, "actors"},
		{"a payment in the copy the aggregate does not count yet", func(s *formsSnapshot) {
			s.payments[103] = formsPayment{staff: 11, customer: 6, amount: 1}
		}, "store revenue"},
		{"a staff move the aggregate applied before the copy", func(s *formsSnapshot) {
			s.byStore = map[int64]formsGroup{1: {30, 1, 1}, 2: {16, 2, 2}}
		}, "store revenue"},
		{"a distinct count ahead of its payments", func(s *formsSnapshot) { s.byStore[1] = formsGroup{42, 2, 2} }, "store revenue"},
		{"a group left behind after its last payment moved", func(s *formsSnapshot) { s.byStore[3] = formsGroup{1, 1, 1} }, "store revenue"},
		{"a region missing its group", func(s *formsSnapshot) { delete(s.byRegion, 7) }, "region revenue"},
		{"a region's distinct customers behind", func(s *formsSnapshot) { s.byRegion[7] = formsGroup{46, -1, 1} }, "region revenue"},
		{"a region aggregate behind its stores' copy", func(s *formsSnapshot) { s.byRegion = map[int64]formsGroup{8: {46, -1, 2}} }, "region revenue"},
		{"a cast array carrying an actor's old name", func(s *formsSnapshot) {
			s.films[50] = formsCast{title: "Heat", count: 2, actors: []formsActor{{21, ptr("Bob"), ptr("Kim")}, {20, ptr("Ann"), ptr("Lee")}}}
		}, "cast"},
		{"a cast array in the old name order", func(s *formsSnapshot) {
			s.films[50] = formsCast{title: "Heat", count: 2, actors: []formsActor{{20, ptr("Ann"), ptr("Lee")}, {21, ptr("Bo"), ptr("Kim")}}}
		}, "cast"},
		{"a role in film_actor's copy the array lacks", func(s *formsSnapshot) { s.roles[[2]int64{51, 20}] = true }, "cast"},
		{"a cast array with a role film_actor's copy lost", func(s *formsSnapshot) { delete(s.roles, [2]int64{50, 20}) }, "cast"},
		{"an empty cast as an empty array, not NULL", func(s *formsSnapshot) { s.films[51] = formsCast{title: "Ran", actors: []formsActor{}} }, "cast"},
	}
	for _, c := range cases {
		s := whole()
		c.edit(&s)
		got := s.violations(open)
		switch {
		case c.kind == "" && len(got) > 0:
			t.Errorf("%s: reported %q", c.why, got)
		case c.kind != "" && !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, c.kind+": ") }):
			t.Errorf("%s: want a %q violation, got %q", c.why, c.kind, got)
		}
	}
}
