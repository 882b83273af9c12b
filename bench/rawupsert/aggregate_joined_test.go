package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/projections"
)

// TestJoinedReplay: B2 of an aggregate grouped by a joined parent's
// column writes, per batch, the contributions with their link and group
// columns, the parent state, the regroup of the contributions below a
// parent whose group column changed, and the group rows as the parent
// state gives them; its group rows are what the projector's must equal
// (benchall's b2_check), so their values are checked here.
func TestJoinedReplay(t *testing.T) {
	// Payments (id, staff_id, amount); staff (id, store_id).
	pay := func(id, staff, amount string) replayStep {
		return replayStep{writes: []projections.Write{{Kind: projections.Upsert, Key: id, Values: projections.ValuesOf(id, staff, amount)}}}
	}
	payDel := func(id string) replayStep {
		return replayStep{writes: []projections.Write{{Kind: projections.Delete, Key: id, Values: projections.ValuesOf(id)}}}
	}
	staff := func(id, store string) replayStep {
		return replayStep{parent: true, writes: []projections.Write{{Kind: projections.Upsert, Key: id, Values: projections.ValuesOf(id, store)}}}
	}
	r := &joinedReplay{
		g: &grouping{group: []string{"store_id"}, at: map[string]int{"id": 0, "staff_id": 1, "amount": 2}, numeric: map[string]bool{"amount": true},
			aggs: []aggregate{{column: "n", fn: "count"}, {column: "sum", fn: "sum", arg: "amount"}}},
		jg:      &joinedGroup{link: "staff_id", parentKey: "id", joined: []string{"store_id"}},
		srcCols: []string{"id", "staff_id", "amount"},
		parAt:   map[string]int{"id": 0, "store_id": 1},
		pk:      []string{"id"},
	}
	const upd = " ON DUPLICATE KEY UPDATE `n` = VALUES(`n`), `sum` = VALUES(`sum`)"
	const cUpd = " ON DUPLICATE KEY UPDATE `staff_id` = VALUES(`staff_id`), `amount` = VALUES(`amount`), `store_id` = VALUES(`store_id`)"
	const pUpd = " ON DUPLICATE KEY UPDATE `store_id` = VALUES(`store_id`)"
	const regroup = "UPDATE `tc` c LEFT JOIN `tp` p ON p.`id` = c.`staff_id` SET c.`store_id` = p.`store_id` WHERE c.`staff_id` IN "
	for _, c := range []struct {
		why    string
		steps  []replayStep
		batch  int
		want   []string // transactions, statements joined by " ; "
		counts [3]int   // contributions, parent states, group rows written
	}{
		{"the group is the parent's column; the contribution carries it and its link",
			[]replayStep{staff("1", "10"), pay("100", "1", "5"), pay("101", "1", "7")}, 10,
			[]string{"INSERT INTO `tc` VALUES ('100','1','5','10'),('101','1','7','10')" + cUpd + " ; INSERT INTO `tp` VALUES ('1','10')" + pUpd + " ; " + regroup + "('1') ; INSERT INTO `t` VALUES ('10',2,12)" + upd},
			[3]int{2, 1, 1}},
		{"a staff move regroups every payment below it: the old group is deleted when empty",
			[]replayStep{staff("1", "10"), pay("100", "1", "5"), staff("1", "20")}, 2,
			[]string{
				"INSERT INTO `tc` VALUES ('100','1','5','10')" + cUpd + " ; INSERT INTO `tp` VALUES ('1','10')" + pUpd + " ; " + regroup + "('1') ; INSERT INTO `t` VALUES ('10',1,5)" + upd,
				"INSERT INTO `tp` VALUES ('1','20')" + pUpd + " ; " + regroup + "('1') ; INSERT INTO `t` VALUES ('20',1,5)" + upd + " ; DELETE FROM `t` WHERE (`store_id`) IN (('10'))"},
			[3]int{1, 2, 3}},
		{"a payment whose staff member is missing is in no group (NULL group column) until the parent comes",
			[]replayStep{pay("100", "1", "5"), staff("1", "10")}, 1,
			[]string{
				"INSERT INTO `tc` VALUES ('100','1','5',NULL)" + cUpd,
				"INSERT INTO `tp` VALUES ('1','10')" + pUpd + " ; " + regroup + "('1') ; INSERT INTO `t` VALUES ('10',1,5)" + upd},
			[3]int{1, 1, 1}},
		{"a parent change that keeps the group moves nothing; a delete withdraws the contribution",
			[]replayStep{staff("1", "10"), pay("100", "1", "5"), pay("101", "1", "7"), staff("1", "10"), payDel("100")}, 3,
			[]string{
				"INSERT INTO `tc` VALUES ('100','1','5','10'),('101','1','7','10')" + cUpd + " ; INSERT INTO `tp` VALUES ('1','10')" + pUpd + " ; " + regroup + "('1') ; INSERT INTO `t` VALUES ('10',2,12)" + upd,
				"DELETE FROM `tc` WHERE (`id`) IN (('100')) ; INSERT INTO `tp` VALUES ('1','10')" + pUpd + " ; INSERT INTO `t` VALUES ('10',1,7)" + upd},
			[3]int{3, 2, 2}},
	} {
		txns, counts := r.replay("t", c.steps, c.batch, 1)
		var got []string
		for _, txn := range txns {
			got = append(got, strings.Join(txn.stmts, " ; "))
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") || counts != c.counts {
			t.Errorf("%s:\n got %v:\n%s\nwant %v:\n%s", c.why, counts, strings.Join(got, "\n"), c.counts, strings.Join(c.want, "\n"))
		}
	}
}

// TestJoinedReplayConnections: on several connections, a batch that
// writes parent state (and so may regroup) is one transaction in a phase
// of its own, as the projector runs it alone; the other batches' rows are
// dealt to the connections by key (contribution by source row, group row
// by group), so each row has one writer and the final group rows are the
// same on any connection count (b2_check compares their checksum).
func TestJoinedReplayConnections(t *testing.T) {
	pay := func(id, staff, amount string) replayStep {
		return replayStep{writes: []projections.Write{{Kind: projections.Upsert, Key: id, Values: projections.ValuesOf(id, staff, amount)}}}
	}
	staff := func(id, store string) replayStep {
		return replayStep{parent: true, writes: []projections.Write{{Kind: projections.Upsert, Key: id, Values: projections.ValuesOf(id, store)}}}
	}
	r := &joinedReplay{
		g: &grouping{group: []string{"store_id"}, at: map[string]int{"id": 0, "staff_id": 1, "amount": 2}, numeric: map[string]bool{"amount": true},
			aggs: []aggregate{{column: "n", fn: "count"}, {column: "sum", fn: "sum", arg: "amount"}}},
		jg:      &joinedGroup{link: "staff_id", parentKey: "id", joined: []string{"store_id"}},
		srcCols: []string{"id", "staff_id", "amount"},
		parAt:   map[string]int{"id": 0, "store_id": 1},
		pk:      []string{"id"},
	}
	const upd = " ON DUPLICATE KEY UPDATE `n` = VALUES(`n`), `sum` = VALUES(`sum`)"
	const cUpd = " ON DUPLICATE KEY UPDATE `staff_id` = VALUES(`staff_id`), `amount` = VALUES(`amount`), `store_id` = VALUES(`store_id`)"
	const pUpd = " ON DUPLICATE KEY UPDATE `store_id` = VALUES(`store_id`)"
	const regroup = "UPDATE `tc` c LEFT JOIN `tp` p ON p.`id` = c.`staff_id` SET c.`store_id` = p.`store_id` WHERE c.`staff_id` IN "
	// Two-record batches: the staff (alone), two payments in two stores,
	// a staff move with a payment (alone), one payment. Rows "100", "102"
	// and group "10" hash to connection 0; "101", "103" and "20" to 1.
	steps := []replayStep{staff("1", "10"), staff("2", "20"), pay("100", "1", "5"), pay("101", "2", "7"),
		staff("2", "10"), pay("102", "1", "3"), pay("103", "1", "1")}
	txns, counts := r.replay("t", steps, 2, 2)
	var got []string
	for i, ph := range phases(txns, 2) {
		for c, list := range ph {
			for _, stmts := range list {
				got = append(got, fmt.Sprintf("phase %d conn %d: %s", i, c, strings.Join(stmts, " ; ")))
			}
		}
	}
	want := []string{
		"phase 0 conn 0: INSERT INTO `tp` VALUES ('1','10'),('2','20')" + pUpd + " ; " + regroup + "('1','2')",
		"phase 1 conn 0: INSERT INTO `tc` VALUES ('100','1','5','10')" + cUpd + " ; INSERT INTO `t` VALUES ('10',1,5)" + upd,
		"phase 1 conn 1: INSERT INTO `tc` VALUES ('101','2','7','20')" + cUpd + " ; INSERT INTO `t` VALUES ('20',1,7)" + upd,
		"phase 2 conn 0: INSERT INTO `tc` VALUES ('102','1','3','10')" + cUpd + " ; INSERT INTO `tp` VALUES ('2','10')" + pUpd + " ; " + regroup + "('2') ; INSERT INTO `t` VALUES ('10',3,15)" + upd + " ; DELETE FROM `t` WHERE (`store_id`) IN (('20'))",
		"phase 3 conn 0: INSERT INTO `t` VALUES ('10',4,16)" + upd,
		"phase 3 conn 1: INSERT INTO `tc` VALUES ('103','1','1','10')" + cUpd,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || counts != [3]int{4, 3, 5} {
		t.Errorf("got %v:\n%s\nwant:\n%s", counts, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPhases: alone transactions are barriers; the runs between them are
// one phase each, every connection's transactions kept in batch order.
func TestPhases(t *testing.T) {
	a := func(s string) joinedTxn { return joinedTxn{alone: true, stmts: []string{s}} }
	on := func(c int, s string) joinedTxn { return joinedTxn{conn: c, stmts: []string{s}} }
	for _, c := range []struct {
		why  string
		txns []joinedTxn
		want string // phases separated by " | ", connections by " / "
	}{
		{"no parent change: one phase, every connection at once", []joinedTxn{on(0, "a"), on(1, "b"), on(0, "c")}, "a,c / b"},
		{"a parent change between runs splits them", []joinedTxn{on(1, "a"), a("p"), on(0, "b")}, " / a | p | b / "},
		{"parent changes back to back are each alone", []joinedTxn{a("p"), a("q")}, "p | q"},
		{"nothing to run", nil, ""},
	} {
		var phs []string
		for _, ph := range phases(c.txns, 2) {
			var cs []string
			for _, list := range ph {
				var ts []string
				for _, stmts := range list {
					ts = append(ts, strings.Join(stmts, ";"))
				}
				cs = append(cs, strings.Join(ts, ","))
			}
			phs = append(phs, strings.Join(cs, " / "))
		}
		if got := strings.Join(phs, " | "); got != c.want {
			t.Errorf("%s: got %q, want %q", c.why, got, c.want)
		}
	}
}

// TestParseJoinedGroup: -aggregate measures the join it can replay (one
// join on one column, giving a group column under its own name) and says
// so for any other, rather than measuring other groups than the
// projector's.
func TestParseJoinedGroup(t *testing.T) {
	staff := config.Join{From: "s.staff", On: map[string]string{"id": "staff_id"}, Columns: map[string]string{"store_id": "store_id"}}
	renamed := staff
	renamed.Columns = map[string]string{"store": "store_id"}
	via := staff
	via.Via = "x"
	for _, c := range []struct {
		why  string
		d    config.Projection
		want string // an error's text, or the link when none
	}{
		{"no join: the plain -aggregate", config.Projection{GroupBy: []string{"customer_id"}}, ""},
		{"a group column from the join", config.Projection{GroupBy: []string{"store_id"}, Join: []config.Join{staff}}, "staff_id"},
		{"a join through via is not replayed", config.Projection{GroupBy: []string{"store_id"}, Join: []config.Join{via}}, "one join on one column"},
		{"a renamed joined column is refused (the state columns carry the parent's names)", config.Projection{GroupBy: []string{"store"}, Join: []config.Join{renamed}}, "under its parent column's name"},
		{"a join that gives no group column is not this form", config.Projection{GroupBy: []string{"staff_id"}, Join: []config.Join{staff}}, "no group_by column is the join's"},
	} {
		jg, err := parseJoinedGroup("p", c.d)
		got := ""
		if err != nil {
			got = err.Error()
		} else if jg != nil {
			got = jg.link
		}
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.why, got, c.want)
		}
	}
}
