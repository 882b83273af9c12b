package benchio

import "fmt"

// StampTriggers are the statements that make a read table say when it
// showed a source change (benchall's workload latency steps): columns
// _bench_visible_at and _bench_stamped_us, and triggers that, on an
// insert, and on an update when column (a read column holding a source
// change's commit_us: a copy of the source row's, or a group's
// max(commit_us)) grows — or, with onEqual, also when it is written
// again at the same value — set _bench_stamped_us to column and
// _bench_visible_at to NOW(6), the triggering statement's start, as
// ON UPDATE CURRENT_TIMESTAMP(6) would. A change that leaves column
// smaller or, without onEqual, equal (a join's fan-out, a group member
// leaving) keeps the stamp. The table must have _bench_visible_at (as
// benchall creates read tables), whatever its definition.
func StampTriggers(table, column string, onEqual bool) []string {
	cmp := ">"
	if onEqual {
		cmp = ">="
	}
	q := "`" + table + "`"
	return []string{
		fmt.Sprintf("ALTER TABLE %s MODIFY _bench_visible_at TIMESTAMP(6) NULL DEFAULT NULL, ADD COLUMN IF NOT EXISTS _bench_stamped_us BIGINT NULL", q),
		fmt.Sprintf("DROP TRIGGER IF EXISTS `%s_bench_ins`", table),
		fmt.Sprintf("DROP TRIGGER IF EXISTS `%s_bench_upd`", table),
		fmt.Sprintf("CREATE TRIGGER `%s_bench_ins` BEFORE INSERT ON %s FOR EACH ROW SET NEW._bench_stamped_us = NEW.`%s`, NEW._bench_visible_at = NOW(6)", table, q, column),
		fmt.Sprintf("CREATE TRIGGER `%s_bench_upd` BEFORE UPDATE ON %s FOR EACH ROW IF NEW.`%s` %s COALESCE(OLD._bench_stamped_us, -1) THEN SET NEW._bench_stamped_us = NEW.`%s`, NEW._bench_visible_at = NOW(6); END IF",
			table, q, column, cmp, column),
	}
}
