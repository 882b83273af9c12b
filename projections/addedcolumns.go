package projections

// Columns added to a source table after some of its events. An event
// written before `ALTER TABLE … ADD COLUMN c` has no member c, and the
// ALTER writes no row event: every row not changed since holds c's
// default on the source. A projection declared, rebuilt or replayed after
// the ALTER reads those events from the topics' history. For a column
// whose default is NULL (not generated) a missing member is read as null,
// which is what the source holds for such a row; the event of any later
// change carries the value. A column added with another default (or
// generated) still stops the projection, and DroppedColumn says why and
// the fix: readside does not reproduce a default's value in the
// envelope's encoding. Only columns the source table has now are filled:
// one dropped or renamed since stays a stop.

import (
	"encoding/json"
	"sync"

	"github.com/readside/readside/event"
)

// addedColumns is what SourceColumns read of a projection's tables:
// per topic, the columns a member missing from an event is null for, and
// the other columns' defaults (for messages). Read-only once made, but
// for its layout cache.
type addedColumns struct {
	nullable map[string][]string
	defaults map[string]map[string]string

	mu sync.Mutex
	// layouts maps an event layout to the layout with the missing
	// nullable columns appended (nil when it lacks none).
	layouts map[layoutKey]extended
}

type extended struct {
	layout *event.Layout
	n      int // its columns
}

type layoutKey struct {
	topic  string
	layout *event.Layout
}

// maxAddedLayouts bounds the layout cache (a topic's layouts change only
// with its table's DDL).
const maxAddedLayouts = 256

// noteAddedColumns keeps what SourceColumns read of the tables (by
// db.table) for the projection's topics.
func (p *Projection) noteAddedColumns(read map[string]*sourceTable) {
	if p.added == nil {
		return
	}
	a := &addedColumns{nullable: map[string][]string{}, defaults: map[string]map[string]string{}, layouts: map[layoutKey]extended{}}
	note := func(topic, db, tbl string) {
		t := read[db+"."+tbl]
		if t == nil || topic == "" {
			return
		}
		a.nullable[topic] = t.nullDefault
		a.defaults[topic] = t.defaults
	}
	note(p.Topic, p.SourceDB, p.SourceTbl)
	for _, j := range p.Joins {
		note(j.Topic, j.ParentDB, j.ParentTbl)
	}
	for _, c := range p.Children {
		note(c.Topic, c.SourceDB, c.SourceTbl)
		for _, j := range c.Joins {
			note(j.Topic, j.ParentDB, j.ParentTbl)
		}
	}
	p.added.Store(a)
}

// fillAdded gives e's images a null for each nullable column of topic's
// table they lack.
func (p *Projection) fillAdded(topic string, e *event.Event) {
	if p.added == nil {
		return
	}
	a := p.added.Load()
	if a == nil || len(a.nullable[topic]) == 0 {
		return
	}
	e.Before = a.image(topic, e.Before)
	e.After = a.image(topic, e.After)
}

func (a *addedColumns) image(topic string, im *event.Image) *event.Image {
	if im == nil {
		return nil
	}
	k := layoutKey{topic, im.Layout()}
	a.mu.Lock()
	ext, seen := a.layouts[k]
	if !seen {
		var missing []string
		for _, c := range a.nullable[topic] {
			if k.layout.Pos(c) < 0 {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			names := append(k.layout.Names(), missing...)
			ext = extended{event.LayoutOf(names), len(names)}
		}
		if len(a.layouts) >= maxAddedLayouts {
			clear(a.layouts)
		}
		a.layouts[k] = ext
	}
	a.mu.Unlock()
	if ext.layout == nil {
		return im
	}
	vals := im.Values()
	out := make([]json.RawMessage, len(vals), ext.n)
	copy(out, vals)
	for len(out) < ext.n {
		out = append(out, null)
	}
	return event.ImageWith(ext.layout, out)
}

// addedDefault says, for a column of topic's table that an event lacks,
// how the source defines it now ("" when the table has no such column:
// dropped or renamed since, or excluded).
func (p *Projection) addedDefault(topic, col string) string {
	if p.added == nil {
		return ""
	}
	a := p.added.Load()
	if a == nil {
		return ""
	}
	return a.defaults[topic][col]
}

var null = json.RawMessage("null")
