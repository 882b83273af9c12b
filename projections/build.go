package projections

import (
	"fmt"
	"slices"

	"github.com/readside/readside/event"
)

// Build maps polled records to a batch: the newest write per read key and
// per parent key, and the next offsets. A record that cannot be mapped is
// returned in bad with the reason (the caller dead-letters it or stops).
func (p *Projection) Build(records []Record) (b *Batch, bad []Rejected) {
	b = &Batch{Offsets: event.Offsets{}, Writes: make([]Write, 0, len(records))}
	d := p.NewDecoder()
	var plans plans
	var added addedMemo
	// Records come a partition at a time: its next offset is recorded
	// when the run ends, not looked up in the map for every record.
	var run *Record
	for i := range records {
		r := &records[i]
		if run != nil && (r.Partition != run.Partition || r.Topic != run.Topic) {
			b.Offsets.Set(run.Topic, run.Partition, run.Offset+1)
		}
		run = r
		if kafkaTombstone(r) {
			continue
		}
		e, err := d.Decode(r.Value)
		if err == nil && r.KeyMoved && e.Op == event.OpCreate {
			// A Debezium key change's delete and create carry one source
			// position. Under a _ci or PAD SPACE collation the two keys
			// can be one row to the sink ('ab' → 'AB'), where the create
			// must outrank the delete: it takes the version of the next
			// row slot, which no change has (docs/design/version.md).
			e.Version++
		}
		if err == nil {
			p.fillAdded(r.Topic, &e, &added)
		}
		if err == nil && e.Schema != nil && !slices.Contains(b.Shapes, e.Schema) {
			b.Shapes = append(b.Shapes, e.Schema)
		}
		if err == nil && e.SnapshotFirst && r.Offset > 0 {
			b.SnapshotAgain = fmt.Sprintf("%s partition %d offset %d", r.Topic, r.Partition, r.Offset)
		}
		if err == nil {
			err = p.collect(b, r, e, &plans)
			d.Recycle(e) // collect keeps copies of what it needs
		}
		if err != nil {
			bad = append(bad, Rejected{Record: r, Reason: err})
		}
	}
	if run != nil {
		b.Offsets.Set(run.Topic, run.Partition, run.Offset+1)
	}
	n := len(b.Writes) + len(b.Parents) + len(b.Contributions) + len(b.ChildWrites)
	// In place (the batch's own slice), with what was coalesced away
	// cleared: it would hold its records, and their fetch buffers, while
	// the batch is applied (see prepare).
	kept := coalesce(b.Writes, b.Writes[:0])
	clear(b.Writes[len(kept):])
	b.Writes = kept
	b.Parents = CoalesceParents(b.Parents)
	b.Contributions = CoalesceContributions(b.Contributions)
	b.ChildWrites = CoalesceChildWrites(b.ChildWrites)
	b.Coalesced = int64(n - len(b.Writes) - len(b.Parents) - len(b.Contributions) - len(b.ChildWrites))
	return b, bad
}

func (p *Projection) collect(b *Batch, r *Record, e event.Event, ps *plans) error {
	if r.Topic == p.Topic && p.Aggregation != nil {
		if err := p.collectContribution(b, r, e, ps); err != nil {
			return err
		}
	} else if r.Topic == p.Topic {
		n := len(b.Writes)
		var err error
		if b.Writes, err = p.appendWrites(b.Writes, e, ps); err != nil {
			return err
		}
		for i := n; i < len(b.Writes); i++ {
			b.Writes[i].From = r
		}
	}
	for i, j := range p.Joins {
		if r.Topic != j.Topic {
			continue
		}
		ws, err := p.ParentWrites(i, e)
		if err != nil {
			return err
		}
		for k := range ws {
			ws[k].From = r
		}
		b.Parents = append(b.Parents, ws...)
	}
	for i, c := range p.Children {
		if r.Topic != c.Topic {
			continue
		}
		if err := p.collectChild(b, i, r, e); err != nil {
			return err
		}
	}
	for i, c := range p.Children {
		for k, j := range c.Joins {
			if r.Topic == j.Topic {
				if err := p.collectChildJoin(b, i, k, r, e); err != nil {
					return err
				}
			}
		}
	}
	if e.SourceTS > 0 && e.SourceTS > b.NewestTS {
		b.NewestTS = e.SourceTS
	}
	b.OldestTS = OlderTS(b.OldestTS, e.SourceTS)
	if b.Marks == nil {
		b.Marks = map[string]map[int32]Mark{}
	}
	if b.Marks[r.Topic] == nil {
		b.Marks[r.Topic] = map[int32]Mark{}
	}
	m := Mark{Version: e.Version, TS: e.SourceTS}
	if e.Source != nil {
		m.GTID = e.Source.GTID
	}
	if m.Version > b.Marks[r.Topic][r.Partition].Version {
		b.Marks[r.Topic][r.Partition] = m
	}
	return nil
}

// Rejected is a record the projection refused, with why.
type Rejected struct {
	Record *Record
	Reason error
}
