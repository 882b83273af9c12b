package sinks

// Repairing an aggregate projection's group rows (readside verify
// --repair, verify/aggregate_repair.go). A group row is a function of the
// contributions stored for its source rows, so the repair restores that
// invariant on the sink: it withdraws the contributions of source rows
// that no longer exist (each at its own version: a tombstone, so a late
// event of the row is still refused, and a real delete that is on its way
// withdraws nothing twice) and rebuilds the groups from the contributions
// left, in one transaction. The rebuild deletes the group rows first,
// which locks them, and reads the contributions in a later statement:
// under READ COMMITTED it sees every batch that wrote those groups before
// it, and a batch that writes them after waits for the lock and applies
// its delta to the rebuilt row — the order in which the projector's own
// transactions take turns on a group (aggregate.go).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/readside/readside/projections"
)

// Member is a source row whose stored contribution is to a group.
type Member struct {
	Key     []byte // the source primary key, as the event's record key
	Version uint64
}

// GroupMembers reads the source rows whose stored contributions are to
// groups (each its values in p.Key order).
func (s *MySQL) GroupMembers(ctx context.Context, p *projections.Projection, groups [][]any) ([]Member, error) {
	if len(groups) == 0 {
		return nil, nil
	}
	if err := s.learnSinkColumns(ctx, p); err != nil {
		return nil, err
	}
	m := groupMatch(p, "SELECT `key_text`, `_rs_version` FROM "+q(p.ContributionsTable())+" WHERE ", "", contributionGroup(p), "")
	var out []Member
	for start := 0; start < len(groups); start += chunk {
		part := groups[start:min(start+chunk, len(groups))]
		rows, err := s.db.QueryContext(ctx, m.text(len(part)), slices.Concat(part...)...)
		if err != nil {
			return nil, fmt.Errorf("reading the contributions of %d groups of %s: %w", len(part), p.Table, err)
		}
		for rows.Next() {
			var mb Member
			if err := rows.Scan(&mb.Key, &mb.Version); err != nil {
				rows.Close()
				return nil, err
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

// RepairGroups withdraws the contributions of gone (each only while it
// still has the version given) and rebuilds groups from the
// contributions, in one transaction, retried when the server reports a
// deadlock with a batch or another transient error.
func (s *MySQL) RepairGroups(ctx context.Context, p *projections.Projection, gone []Member, groups [][]any) error {
	var err error
	for range 5 {
		if err = s.repairGroups(ctx, p, gone, groups); err == nil || !retryable(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (s *MySQL) repairGroups(ctx context.Context, p *projections.Projection, gone []Member, groups [][]any) error {
	all, err := s.statementsFor(ctx, p)
	if err != nil {
		return err
	}
	st := all.agg
	if st == nil {
		return fmt.Errorf("projections.%s is not an aggregate projection", p.Name)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := withdrawLocked(ctx, tx, p, st, gone); err != nil {
		return err
	}
	del := groupMatch(p, "DELETE FROM "+q(p.Table)+" WHERE ", "", p.Key, "")
	of := groupMatch(p, "", "", contributionGroup(p), "")
	rebuild, ok := strings.CutSuffix(st.rebuildGroups, " GROUP BY "+strings.Join(quoteAll(contributionGroup(p)), ", "))
	if !ok {
		return fmt.Errorf("the rebuild statement of %s has no GROUP BY of its groups: %s", p.Table, st.rebuildGroups)
	}
	for start := 0; start < len(groups); start += chunk {
		part := groups[start:min(start+chunk, len(groups))]
		args := slices.Concat(part...)
		if _, err := tx.ExecContext(ctx, del.text(len(part)), args...); err != nil {
			return fmt.Errorf("removing %d group rows of %s: %w", len(part), p.Table, err)
		}
		stmt := rebuild + " AND " + of.text(len(part)) + " GROUP BY " + strings.Join(quoteAll(contributionGroup(p)), ", ")
		if _, err := tx.ExecContext(ctx, stmt, args...); err != nil {
			return fmt.Errorf("rebuilding %d group rows of %s from their contributions: %w", len(part), p.Table, err)
		}
		// The reference counts of count(distinct) follow the contributions
		// too (aggregate_distinct.go).
		for _, dst := range st.distinct {
			if _, err := tx.ExecContext(ctx, dst.clearGroups.text(len(part)), args...); err != nil {
				return fmt.Errorf("removing the distinct values of %d groups of %s: %w", len(part), p.Table, err)
			}
			if _, err := tx.ExecContext(ctx, dst.rebuildGroups.text(len(part))+dst.rebuildTail, args...); err != nil {
				return fmt.Errorf("rebuilding the distinct values of %d groups of %s: %w", len(part), p.Table, err)
			}
		}
		// The rebuilt rows are new: each join's state is copied in afresh,
		// as after a truncation's rebuild (aggregate.go).
		in := groupMatch(p, "", "r.", p.Key, "")
		for _, fill := range st.fillJoins {
			if _, err := tx.ExecContext(ctx, fill+" AND "+in.text(len(part)), args...); err != nil {
				return fmt.Errorf("copying the joined columns into %d rebuilt group rows of %s: %w", len(part), p.Table, err)
			}
		}
	}
	return tx.Commit()
}

// WithdrawContributions withdraws the contributions of gone (each only
// while it still has the version given) on a shard that does not hold
// their groups: every shard stores every contribution, and RepairGroups
// withdrew them on their groups' shard, so the contributions tables stay
// the same on every shard (what a reshard would copy whole). No group row
// here changes. Retried as RepairGroups is.
func (s *MySQL) WithdrawContributions(ctx context.Context, p *projections.Projection, gone []Member) error {
	if len(gone) == 0 {
		return nil
	}
	all, err := s.statementsFor(ctx, p)
	if err != nil {
		return err
	}
	st := all.agg
	if st == nil {
		return fmt.Errorf("projections.%s is not an aggregate projection", p.Name)
	}
	for range 5 {
		if err = s.withdrawContributions(ctx, p, st, gone); err == nil || !retryable(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (s *MySQL) withdrawContributions(ctx context.Context, p *projections.Projection, st *aggStatements, gone []Member) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := withdrawLocked(ctx, tx, p, st, gone); err != nil {
		return err
	}
	return tx.Commit()
}

// withdrawLocked withdraws the contributions of gone to p in tx, each
// only while it still has the version given, in the projector's lock
// order (by key) and, when p joins, under the lock its batches regroup
// under.
func withdrawLocked(ctx context.Context, tx *sql.Tx, p *projections.Projection, st *aggStatements, gone []Member) error {
	if st.joined != nil {
		if _, err := tx.ExecContext(ctx, st.joined.lock, joinedLockName(p)); err != nil {
			return fmt.Errorf("locking the groups of %s: %w", p.Name, err)
		}
	}
	gone = slices.Clone(gone)
	slices.SortFunc(gone, func(a, b Member) int { return strings.Compare(string(a.Key), string(b.Key)) })
	withdraw := withdrawOne(p)
	for _, m := range gone {
		if _, err := tx.ExecContext(ctx, withdraw, m.Key, m.Version); err != nil {
			return fmt.Errorf("withdrawing a contribution to %s: %w", p.Table, err)
		}
	}
	return nil
}

// StoresEveryGroup reports whether p's contributions table on this sink
// stores every contribution's group (its comment ends with
// EveryGroupMark), or does not exist yet.
func (s *MySQL) StoresEveryGroup(ctx context.Context, p *projections.Projection) (bool, error) {
	var comment string
	err := s.db.QueryRowContext(ctx, "SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", p.ContributionsTable()).Scan(&comment)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the comment of %s: %w", p.ContributionsTable(), err)
	}
	return strings.HasSuffix(comment, EveryGroupMark), nil
}

// contributionGroup are the group columns of p's contributions table.
func contributionGroup(p *projections.Projection) []string {
	out := make([]string, len(p.Key))
	for i, k := range p.Key {
		out[i] = projections.GroupColumn(k)
	}
	return out
}

// withdrawOne sets one contribution to none (the tombstone: no group,
// counts 0, values NULL) at the version it has.
func withdrawOne(p *projections.Projection) string {
	var none []string
	for _, g := range append(contributionGroup(p), linkColumns(p)...) {
		none = append(none, q(g)+" = NULL") // no links: no regroup brings it back
	}
	for _, a := range p.Aggregation.Aggregates {
		if !a.Stored() {
			continue
		}
		v := q(projections.ContributionColumn(a.Column))
		if a.Counts() {
			none = append(none, v+" = 0")
		} else {
			none = append(none, v+" = NULL")
		}
	}
	return "UPDATE " + q(p.ContributionsTable()) + " SET " + strings.Join(none, ", ") + " WHERE `key_text` = ? AND `_rs_version` = ?"
}
