package verify

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Row comparison: a chunk or a key list read from both sides and each key
// classified as missing, extra, different or misplaced.

// compareRange fetches and compares the rows of a chunk.
func (v *Verifier) compareRange(ctx context.Context, lo, hi Key) ([]Diff, error) {
	srcWhere, srcArgs := rangeWhere(v.pl.srcKey, v.keyKinds, lo, hi)
	sinkWhere, sinkArgs := rangeWhere(v.pl.readKey, v.keyKinds, lo, hi)
	return v.compare(ctx, srcWhere, srcArgs, sinkWhere, sinkArgs, nil)
}

// compareKeys fetches and compares the given keys.
func (v *Verifier) compareKeys(ctx context.Context, keys []Key) ([]Diff, error) {
	var out []Diff
	const per = 200
	for start := 0; start < len(keys); start += per {
		part := keys[start:min(start+per, len(keys))]
		srcWhere, srcArgs := keyIn(v.pl.srcKey, part, v.keyKinds)
		sinkWhere, sinkArgs := keyIn(v.pl.readKey, part, v.keyKinds)
		d, err := v.compare(ctx, srcWhere, srcArgs, sinkWhere, sinkArgs, part)
		if err != nil {
			return nil, err
		}
		out = append(out, d...)
	}
	return out, nil
}

// compare reads both sides under the given conditions and classifies each
// key. The source rows are read without the SQL filter, which is selected
// as a cell of each row instead: a row failing it is not wanted on the
// sink (and its key is told apart from a key without a source row). The
// filter is typed as the projector's is, so its SQL value is the
// projector's (expressions.go).
func (v *Verifier) compare(ctx context.Context, srcWhere string, srcArgs []any, sinkWhere string, sinkArgs []any, only []Key) ([]Diff, error) {
	src := map[string]*srcRow{}
	var order []string
	exprs := v.pl.srcExprs()
	if v.pl.whereSQL != "" {
		exprs = append(exprs, whereTruth(v.pl.whereSQL))
	}
	srcWeights := v.weightExprs(v.pl.srcExprs())
	exprs = append(exprs, srcWeights...)
	rows, err := v.src.QueryContext(ctx, "SELECT "+strings.Join(exprs, ", ")+" FROM "+v.pl.sourceFrom(false, true)+" WHERE "+srcWhere, srcArgs...)
	if err != nil {
		return nil, fmt.Errorf("reading %s.%s rows: %w", v.p.SourceDB, v.p.SourceTbl, err)
	}
	cts, err := rows.ColumnTypes()
	if err != nil {
		rows.Close()
		return nil, err
	}
	kinds := make([]kind, len(cts))
	for i, ct := range cts {
		kinds[i] = kindOf(ct)
	}
	for rows.Next() {
		cells, err := scanCells(rows, kinds)
		if err != nil {
			rows.Close()
			return nil, err
		}
		r := &srcRow{cells: cells[:len(v.pl.cols)], passes: true, weights: v.spreadWeights(cells[len(cells)-len(srcWeights):])}
		if v.pl.whereSQL != "" {
			r.passes = passesSQL(cells[len(v.pl.cols)])
		}
		k := v.matchText(r.cells, r.weights)
		src[k] = r
		order = append(order, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sink := map[string][]sinkCopy{}
	sinkWeights := v.weightExprs(v.pl.readExprs())
	readExprs := append(append(v.pl.readExprs(), "`_rs_version`"), sinkWeights...)
	sinkKinds := append(append([]kind{}, kinds[:len(v.pl.cols)]...), kInt)
	for range sinkWeights {
		sinkKinds = append(sinkKinds, kText)
	}
	for i, sh := range v.sink.Shards {
		rows, err := sh.DB().QueryContext(ctx, "SELECT "+strings.Join(readExprs, ", ")+" FROM "+q(v.p.Table)+" WHERE "+sinkWhere, sinkArgs...)
		if err != nil {
			return nil, fmt.Errorf("reading %s on shard %s: %w", v.p.Table, sh.Range.Text, err)
		}
		for rows.Next() {
			cells, err := scanCells(rows, sinkKinds)
			if err != nil {
				rows.Close()
				return nil, err
			}
			n := len(v.pl.cols)
			ver, _ := strconv.ParseUint(*cells[n], 10, 64)
			c := sinkCopy{cells: cells[:n], version: ver, shard: i, weights: v.spreadWeights(cells[n+1:])}
			k := v.matchText(c.cells, c.weights)
			if _, ok := sink[k]; !ok && src[k] == nil {
				order = append(order, k)
			}
			sink[k] = append(sink[k], c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	var out []Diff
	for _, k := range order {
		for _, d := range v.classify(src[k], sink[k]) {
			d.match = k
			out = append(out, d)
		}
	}
	return out, nil
}

// suspectID is the key a re-check finds d's row by: its match text, or
// its key's text for a Diff not made by compare.
func (d Diff) suspectID() string {
	if d.match != "" {
		return d.match
	}
	return d.key.text()
}

func (v *Verifier) keyOf(cells []*string) Key {
	k := make(Key, len(v.p.Key))
	for i := range k {
		if cells[i] != nil {
			k[i] = *cells[i]
		}
	}
	return k
}

// classify compares one key's source row (nil: none) with its sink
// copies. A copy outside its shard's key range is misplaced whatever its
// content; the copy on the right shard is compared with the source.
func (v *Verifier) classify(s *srcRow, copies []sinkCopy) []Diff {
	var out []Diff
	var cells []*string
	if s != nil {
		cells = s.cells
	} else {
		cells = copies[0].cells
	}
	key := v.keyOf(cells)
	home := 0
	if v.shardIdx >= 0 {
		home = v.home(key[v.shardIdx])
	}
	mk := func(kind string, shard int) Diff {
		d := Diff{Kind: kind, key: key, shardIdx: shard, Shard: v.sink.Shards[shard].Range.Text, Key: map[string]string{}, srcExists: s != nil}
		for i, n := range v.p.Key {
			d.Key[n] = key[i]
		}
		if s != nil {
			d.srcRow = s.cells
		}
		return d
	}
	var right *sinkCopy
	for i := range copies {
		if copies[i].shard == home {
			right = &copies[i]
			continue
		}
		d := mk("misplaced", copies[i].shard)
		d.sinkVer = copies[i].version
		out = append(out, d)
	}
	want := s != nil && s.passes
	switch {
	case want && right == nil:
		if len(out) == 0 {
			d := mk("missing", home)
			d.publish = true
			out = append(out, d)
		} else {
			// Only a copy on the wrong shard: counted as misplaced, and the
			// repair publishes the row to its home shard too.
			out[0].publish = true
		}
	case !want && right != nil:
		d := mk("extra", home)
		d.sinkVer = right.version
		d.publish = s != nil // an r event failing the filter deletes it
		out = append(out, d)
	case want && right != nil:
		d := mk("different", home)
		d.sinkVer = right.version
		for i, c := range v.pl.cols {
			same, weighed := sameWeighed(i, s.weights, right.weights)
			if !weighed {
				same = v.sameCell(i, s.cells[i], right.cells[i])
			}
			if !same {
				d.Columns = append(d.Columns, ColumnDiff{Name: c.Read, Source: s.cells[i], Sink: right.cells[i]})
				if j := v.joinOf(i); j >= 0 {
					d.parentDiff = append(d.parentDiff, j)
				}
			}
		}
		if len(d.Columns) > 0 {
			d.publish = true
			out = append(out, d)
		}
	}
	return out
}

// joinOf is the join (index) filling compared column i; -1 when no join
// does (the projection's own, aggregate and children columns).
func (v *Verifier) joinOf(i int) int {
	i -= v.pl.joinStart
	if i < 0 {
		return -1
	}
	for ji, j := range v.p.Joins {
		if i < len(j.Columns) {
			return ji
		}
		i -= len(j.Columns)
	}
	return -1
}
