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
// envelope's encoding. Only columns the source table has now are filled
// (one dropped or renamed since stays a stop), and nothing in an event
// that holds a column the table no longer has: after a RENAME COLUMN the
// older events carry the values under the old name. Nor over another
// tool's topics (input.kind: debezium), whose connector may leave a
// column out of every event; readside's own exclusions are no columns to
// a projection at all (sourceTable.exclude).

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/readside/readside/event"
)

// addedColumns is what SourceColumns read of a projection's tables: per
// topic, each column the table has now (but those no event carries,
// source.exclude_columns) with its default, nullDefaultMark for the
// columns a member missing from an event is null for. Read-only once
// made, but for its layout cache.
type addedColumns struct {
	defaults map[string]map[string]string

	mu sync.Mutex
	// layouts maps an event layout to the layout with the missing
	// nullable columns appended (nil when it lacks none, or holds a
	// column the table no longer has).
	layouts map[layoutKey]extended
	// gone: per topic, columns of events the table no longer has
	// (dropped, or renamed: then the missing column may be the same one
	// under its new name, and is not filled).
	gone map[string][]string
}

// nullDefaultMark is a NULL default in sourceTable.defaults.
const nullDefaultMark = ""

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
	if p.added == nil || p.foreignTopics {
		return
	}
	a := &addedColumns{defaults: map[string]map[string]string{}, layouts: map[layoutKey]extended{}, gone: map[string][]string{}}
	note := func(topic, db, tbl string) {
		if t := read[db+"."+tbl]; t != nil && topic != "" {
			a.defaults[topic] = t.defaults
		}
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

// addedMemo is a run of records' last layout and what it extends to: a
// poll brings a partition's records together, mostly of one layout, so
// the shared cache is looked up once per run, not per image.
type addedMemo struct {
	a   *addedColumns
	key layoutKey
	ext extended
}

// fillAdded gives e's images a null for each nullable column of topic's
// table they lack. memo is the caller's, for one run of records.
func (p *Projection) fillAdded(topic string, e *event.Event, memo *addedMemo) {
	if p.added == nil {
		return
	}
	a := p.added.Load()
	if a == nil || a.defaults[topic] == nil {
		return
	}
	e.Before = a.image(topic, e.Before, memo)
	e.After = a.image(topic, e.After, memo)
}

func (a *addedColumns) image(topic string, im *event.Image, memo *addedMemo) *event.Image {
	if im == nil {
		return nil
	}
	k := layoutKey{topic, im.Layout()}
	if memo.a == a && memo.key == k {
		return memo.ext.extend(im)
	}
	ext := a.extension(k)
	*memo = addedMemo{a: a, key: k, ext: ext}
	return ext.extend(im)
}

// extension is what layout k.layout of topic k.topic extends to.
func (a *addedColumns) extension(k layoutKey) extended {
	a.mu.Lock()
	ext, seen := a.layouts[k]
	if !seen {
		var missing, gone []string
		for c, def := range a.defaults[k.topic] {
			if def == nullDefaultMark && k.layout.Pos(c) < 0 {
				missing = append(missing, c)
			}
		}
		slices.Sort(missing)
		for _, c := range k.layout.Names() {
			if _, ok := a.defaults[k.topic][c]; !ok {
				gone = append(gone, c)
			}
		}
		if len(gone) > 0 && len(missing) > 0 {
			// A rename leaves the old name in older events: the
			// missing column may hold its values there.
			for _, c := range gone {
				if !slices.Contains(a.gone[k.topic], c) {
					a.gone[k.topic] = append(a.gone[k.topic], c)
				}
			}
			missing = nil
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
	return ext
}

// extend is im under the extended layout, the missing columns null (im
// itself when nothing is missing).
func (x extended) extend(im *event.Image) *event.Image {
	if x.layout == nil {
		return im
	}
	vals := im.Values()
	out := make([]json.RawMessage, len(vals), x.n)
	copy(out, vals)
	for len(out) < x.n {
		out = append(out, null)
	}
	return event.ImageWith(x.layout, out)
}

// addedStop is the StopError for an event of topic lacking col, which
// where maps, when the table has col now (added after the event); nil
// when it does not (dropped or renamed since, or excluded).
func (p *Projection) addedStop(topic, col, table, where string, reason error) error {
	if p.added == nil {
		return nil
	}
	a := p.added.Load()
	if a == nil {
		return nil
	}
	def, ok := a.defaults[topic][col]
	if !ok {
		return nil
	}
	fix := fmt.Sprintf("give the projection a history that has the column: snapshot every table it reads (`readside snapshot --table %s --wait`, and so for the others), "+
		"then `readside replay --projection %s --from <the time the first snapshot started>`; then send readside SIGHUP (or restart it); or map the column later, once every row has been written since the ALTER", table, p.Name)
	if def != nullDefaultMark {
		return &StopError{Projection: p.Name, Fix: fix,
			Reason: fmt.Errorf("source column %s.%s, which %s maps, is missing from events written before an ALTER TABLE added it (the source has it now, %s): "+
				"the ALTER wrote no row events, and readside fills a column missing from older events only when its default is NULL (%w)", table, col, where, def, reason)}
	}
	a.mu.Lock()
	gone := a.gone[topic]
	a.mu.Unlock()
	return &StopError{Projection: p.Name, Fix: "if the column was renamed: " + fix + "; if it was added and another one dropped, the same",
		Reason: fmt.Errorf("source column %s.%s, which %s maps, is missing from events that hold column(s) %s the source no longer has: if %s is one of them renamed, those events carry its values under the old name, "+
			"which readside does not follow across a rename, so it does not read them as NULL (%w)", table, col, where, strings.Join(gone, ", "), col, reason)}
}

var null = json.RawMessage("null")
