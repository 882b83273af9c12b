package sinks

// Repairing nested children (readside verify --repair,
// verify/children.go). A parent's array is rebuilt from the child state
// the sink keeps; re-published child rows reset the state of the children
// that exist, but nothing is published for a child deleted on the source
// whose delete the sink never got. The repair withdraws such a child's
// state at its own version (the tombstone: a late event of the row is
// still refused, and the real delete, if it is on its way, finds nothing
// left to remove) and refreshes the arrays of its links, in one
// transaction taking the locks a batch takes in the order it takes them
// (children.go): the child's state row, then the link rows, then the
// refresh reads the state committed by every batch before it.

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/readside/readside/projections"
)

// ChildMember is a child row whose stored state links it to a parent.
type ChildMember struct {
	Key     []byte // the child's primary key, as its record key
	Version uint64
	// PK are the child's primary key values as stored (text, or the bytes
	// of a binary column), in Children.SourceKey order.
	PK []string
}

// ChildMembers reads the child rows whose stored state links them to
// links (each the parent's values of children entry i's On columns).
func (s *MySQL) ChildMembers(ctx context.Context, p *projections.Projection, i int, links [][]any) ([]ChildMember, error) {
	c := p.Children[i]
	if len(links) == 0 {
		return nil, nil
	}
	var link, pk []string
	for _, on := range c.On {
		link = append(link, q(projections.ChildStateColumn(on.Child)))
	}
	for _, k := range c.SourceKey() {
		pk = append(pk, q(projections.ChildStateColumn(k)))
	}
	if len(pk) == 0 {
		return nil, fmt.Errorf("projections.%s.children.%s: the child table's primary key is not known (type the projection against the source first)", p.Name, c.Name)
	}
	if err := s.learnSinkColumns(ctx, p); err != nil {
		return nil, err
	}
	m := keyIn(p, "SELECT `_rs_key`, `_rs_version`, "+strings.Join(pk, ", ")+" FROM "+q(c.StateTable(p))+" WHERE ", link, "")
	var out []ChildMember
	for start := 0; start < len(links); start += chunk {
		part := links[start:min(start+chunk, len(links))]
		rows, err := s.db.QueryContext(ctx, m.text(len(part)), slices.Concat(part...)...)
		if err != nil {
			return nil, fmt.Errorf("reading the child state of %d parents of %s: %w", len(part), p.Table, err)
		}
		for rows.Next() {
			var mb ChildMember
			cells := make([]sql.RawBytes, len(pk))
			dest := []any{&mb.Key, &mb.Version}
			for j := range cells {
				dest = append(dest, &cells[j])
			}
			if err := rows.Scan(dest...); err != nil {
				rows.Close()
				return nil, err
			}
			for _, c := range cells {
				mb.PK = append(mb.PK, string(c))
			}
			out = append(out, mb)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RepairChildren withdraws the child state of gone (each only while it
// still has the version given) and refreshes the arrays and counts of
// links, in one transaction, retried when the server reports a deadlock
// with a batch or another transient error.
func (s *MySQL) RepairChildren(ctx context.Context, p *projections.Projection, i int, gone []ChildMember, links [][]any) error {
	var err error
	for range 5 {
		if err = s.repairChildren(ctx, p, i, gone, links); err == nil || !retryable(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (s *MySQL) repairChildren(ctx context.Context, p *projections.Projection, i int, gone []ChildMember, links [][]any) error {
	c := p.Children[i]
	all, err := s.statementsFor(ctx, p)
	if err != nil {
		return err
	}
	st := all.children[i]
	gone = slices.Clone(gone)
	slices.SortFunc(gone, func(a, b ChildMember) int { return strings.Compare(string(a.Key), string(b.Key)) })
	links = slices.Clone(links)
	slices.SortFunc(links, func(a, b []any) int { return strings.Compare(fmt.Sprint(a...), fmt.Sprint(b...)) })
	var nulls []string
	for _, col := range c.StateColumns() {
		nulls = append(nulls, q(projections.ChildStateColumn(col))+" = NULL")
	}
	withdraw := "UPDATE " + q(c.StateTable(p)) + " SET " + strings.Join(nulls, ", ") + " WHERE `_rs_key` = ? AND `_rs_version` = ?"
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, m := range gone {
		if _, err := tx.ExecContext(ctx, withdraw, m.Key, m.Version); err != nil {
			return fmt.Errorf("withdrawing a child state of %s: %w", p.Table, err)
		}
	}
	for start := 0; start < len(links); start += chunk {
		part := links[start:min(start+chunk, len(links))]
		args := slices.Concat(part...)
		if _, err := tx.ExecContext(ctx, st.lock.text(len(part)), args...); err != nil {
			return fmt.Errorf("locking %d parent links of %s: %w", len(part), p.Table, err)
		}
		if _, err := tx.ExecContext(ctx, st.refresh.text(len(part)), args...); err != nil {
			return fmt.Errorf("refreshing the %s arrays of %d parents of %s: %w", c.Name, len(part), p.Table, err)
		}
	}
	return tx.Commit()
}
