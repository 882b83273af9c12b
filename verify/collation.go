package verify

import (
	"context"
	"fmt"

	"github.com/readside/readside/expr"
)

// Groups under a collation. An aggregate's group is one row for every
// string equal under its column's collation ('apple', 'APPLE' and
// 'apple ' under utf8mb4_general_ci): the source's GROUP BY shows the
// value of one of the group's rows, the sink the value its group row was
// first written with, and MIN() and MAX() of equal strings keep either.
// So an aggregate's group keys are matched, and its group and aggregate
// cells compared, under their collation; every other column compares
// byte for byte (a copy holds its source row's own bytes).

// learnCollations sets, for an aggregate, the key function of each group
// and aggregate column's collation, from the read table's definition on
// the first shard (read columns have the source's collations). A
// collation expr has no weights for (the _nopad_ ones among them) stays
// byte for byte.
func (v *Verifier) learnCollations(ctx context.Context) error {
	if v.p.Aggregation == nil || v.collate != nil {
		return nil
	}
	rows, err := v.sink.Shards[0].DB().QueryContext(ctx,
		"SELECT COLUMN_NAME, COALESCE(COLLATION_NAME, '') FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", v.p.Table)
	if err != nil {
		return fmt.Errorf("reading the collations of %s: %w", v.p.Table, err)
	}
	defer rows.Close()
	byName := map[string]string{}
	for rows.Next() {
		var name, coll string
		if err := rows.Scan(&name, &coll); err != nil {
			return err
		}
		byName[name] = coll
	}
	if err := rows.Err(); err != nil {
		return err
	}
	v.collate = make([]func(string) string, len(v.pl.cols))
	for i, c := range v.pl.cols[:v.pl.joinStart] {
		v.collate[i], _ = expr.CollationKeyer(byName[c.Read])
	}
	return nil
}

// cellKey is cell i as its column's collation compares it.
func (v *Verifier) cellKey(i int, cell string) string {
	if i < len(v.collate) && v.collate[i] != nil {
		return v.collate[i](cell)
	}
	return cell
}

// matchText is the text a row's key is matched by on both sides.
func (v *Verifier) matchText(cells []*string) string {
	k := v.keyOf(cells)
	for i := range k {
		k[i] = v.cellKey(i, k[i])
	}
	return k.text()
}

// sameCell compares column i's cells (nil: NULL).
func (v *Verifier) sameCell(i int, a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b || v.cellKey(i, *a) == v.cellKey(i, *b)
}
