package verify

import (
	"context"
	"fmt"
	"strings"

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
// collation expr has no weights for (utf8mb4_unicode_ci,
// latin1_german2_ci, the _nopad_ ones, …) is weighed by the servers
// themselves: both sides select WEIGHT_STRING of such a cell (of the
// cell without its trailing spaces under a PAD SPACE collation, which
// compares as if they were not there), and the weights are matched and
// compared instead of the text.
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
	v.weigh = make([]string, len(v.pl.cols))
	for i, c := range v.pl.cols[:v.pl.joinStart] {
		coll := strings.ToLower(byName[c.Read])
		var ok bool
		if v.collate[i], ok = expr.CollationKeyer(coll); ok || coll == "" || coll == "binary" {
			continue
		}
		v.weigh[i] = "HEX(WEIGHT_STRING(RTRIM(%s)))"
		if strings.Contains(coll, "_nopad_") {
			v.weigh[i] = "HEX(WEIGHT_STRING(%s))"
		}
	}
	return nil
}

// weightExprs are the WEIGHT_STRING expressions over exprs (a side's
// SELECT expressions of the compared columns) that weigh asks for.
func (v *Verifier) weightExprs(exprs []string) []string {
	var out []string
	for i, w := range v.weigh {
		if w != "" {
			out = append(out, fmt.Sprintf(w, exprs[i]))
		}
	}
	return out
}

// spreadWeights places the weight cells read after a row's others at
// their columns' indexes (nil when no column is weighed).
func (v *Verifier) spreadWeights(cells []*string) []*string {
	if len(cells) == 0 {
		return nil
	}
	out := make([]*string, len(v.weigh))
	k := 0
	for i, w := range v.weigh {
		if w != "" {
			out[i] = cells[k]
			k++
		}
	}
	return out
}

// cellKey is cell i as its column's collation compares it.
func (v *Verifier) cellKey(i int, cell string) string {
	if i < len(v.collate) && v.collate[i] != nil {
		return v.collate[i](cell)
	}
	return cell
}

// matchText is the text a row's key is matched by on both sides: a
// weighed cell's weight, another's key under its collation.
func (v *Verifier) matchText(cells, weights []*string) string {
	k := v.keyOf(cells)
	for i := range k {
		if i < len(weights) && weights[i] != nil {
			k[i] = "\x00w" + *weights[i]
			continue
		}
		k[i] = v.cellKey(i, k[i])
	}
	return k.text()
}

// sameWeighed compares column i's cells by their weights when the
// column is weighed (ok false when it is not).
func sameWeighed(i int, a, b []*string) (same, ok bool) {
	if i >= len(a) || i >= len(b) || a[i] == nil && b[i] == nil {
		return false, false
	}
	return a[i] != nil && b[i] != nil && *a[i] == *b[i], true
}

// sameCell compares column i's cells (nil: NULL).
func (v *Verifier) sameCell(i int, a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b || v.cellKey(i, *a) == v.cellKey(i, *b)
}
