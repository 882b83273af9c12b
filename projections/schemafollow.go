package projections

// The sink's side of following the source's schema (the projector's side,
// and why a refused value is the trigger: projector/schemafollow.go).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SchemaFollower is a Sink whose read table can follow the source's
// schema. Both methods are synchronous.
type SchemaFollower interface {
	// SchemaRejection reports whether err is the sink refusing a value
	// its read column's type cannot hold (too long, out of range, not a
	// member, not in its character set, NULL in a NOT NULL column): what
	// a read table that followed the source would accept.
	SchemaRejection(err error) bool
	// FollowSchema compares p's read table on every shard with the
	// column definitions types and runs the ALTERs that keep every stored
	// value. It returns the ones it ran, and the differences it cannot
	// close safely (left alone). An error means the sink failed; some
	// ALTERs may have run, and running it again is harmless.
	FollowSchema(ctx context.Context, p *Projection, types Types) (ran, refused []SchemaChange, err error)
}

// SchemaChange is one read column's difference from the source, and the
// ALTER that closes it.
type SchemaChange struct {
	Column string
	Why    string
	Alter  string
	// Silent: the read column would store some of the source's values as
	// other values without an error (a DECIMAL's scale, fractional
	// seconds, a float32 for a double), so no refused row says so.
	Silent bool
}

// ColumnKey is the config key that declares read column col.
func (p *Projection) ColumnKey(col string) string {
	for _, j := range p.Joins {
		if i := slices.IndexFunc(j.Columns, func(c Column) bool { return c.Name == col }); i >= 0 {
			return p.joinColumnKey(j, j.Columns[i])
		}
	}
	return fmt.Sprintf("projections.%s.columns.%s", p.Name, col)
}

// missingColumn: an event lacks a source column the projection maps.
type missingColumn struct {
	source string
}

// MissingColumn is the error of an event that lacks source column
// source, as mapping it gives (DroppedColumn turns it into a stop).
func MissingColumn(source string) error { return &missingColumn{source} }

func (e *missingColumn) Error() string {
	return fmt.Sprintf("source column %q is missing from the event (dropped or renamed by DDL, or excluded)", e.source)
}

// DroppedColumn is the StopError for a record whose event lacks a mapped
// source column, nil when reason is something else.
func (p *Projection) DroppedColumn(topic string, reason error) error {
	var mc *missingColumn
	if !errors.As(reason, &mc) {
		return nil
	}
	var keys []string
	table := p.SourceDB + "." + p.SourceTbl
	if topic == p.Topic {
		for _, c := range p.Columns {
			if c.reads(mc.source) {
				keys = append(keys, fmt.Sprintf("projections.%s.columns.%s", p.Name, c.Name))
			}
		}
	}
	for _, j := range p.Joins {
		if topic != j.Topic {
			continue
		}
		table = j.ParentDB + "." + j.ParentTbl
		for _, c := range j.Columns {
			if c.Source == mc.source {
				keys = append(keys, p.joinColumnKey(j, c))
			}
		}
		for _, on := range j.On {
			if on.Parent == mc.source {
				keys = append(keys, fmt.Sprintf("projections.%s.join[%d].on", p.Name, j.N-1))
			}
		}
	}
	for _, c := range p.Children {
		if topic == c.Topic {
			table = c.SourceDB + "." + c.SourceTbl
			keys = append(keys, c.columnKeys(p, mc.source)...)
		}
		for _, j := range c.Joins {
			if topic != j.Topic {
				continue
			}
			table = j.ParentDB + "." + j.ParentTbl
			for _, col := range j.Columns {
				if col.Source == mc.source {
					keys = append(keys, fmt.Sprintf("projections.%s.children.%s.join[%d].columns.%s", p.Name, c.Name, j.N-1, col.Name))
				}
			}
			for _, on := range j.On {
				if on.Parent == mc.source {
					keys = append(keys, fmt.Sprintf("projections.%s.children.%s.join[%d].on", p.Name, c.Name, j.N-1))
				}
			}
		}
	}
	where := strings.Join(keys, ", ")
	if where == "" {
		where = "projections." + p.Name
	}
	if err := p.addedStop(topic, mc.source, table, where, reason); err != nil {
		return err
	}
	return &StopError{Projection: p.Name,
		Reason: fmt.Errorf("source column %s.%s, which %s maps, is missing from its events: dropped or renamed by DDL, or excluded (%w)", table, mc.source, where, reason),
		Fix: fmt.Sprintf("remove %s from the config, or map it to the column's new name if it was renamed; then run `readside plan --apply` and restart readside (or send it SIGHUP): "+
			"the projection resumes at the first row it could not apply", where)}
}
