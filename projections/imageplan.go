package projections

import "github.com/readside/readside/event"

// imagePlan is where a projection's columns are in the images of one
// layout, and how each value binds under one schema (see Decoder: events
// of a table share both, so the plan is made once per run of them).
type imagePlan struct {
	layout *event.Layout
	schema *event.Schema
	pos    []int      // per Projection.Columns: position in the image, -1 if absent
	kinds  []bindKind // per Projection.Columns
	joins  [][]int    // per join, per On: position of the child's column
	// args are, per computed column, the positions of the source columns
	// its expression reads (nil for a plain column; nil in all when the
	// projection computes none).
	args [][]int
}

// plans caches a projection's last image plan; the zero value is ready.
// Not safe for concurrent use.
type plans struct{ last *imagePlan }

func (ps *plans) of(p *Projection, im *event.Image, sc *event.Schema) *imagePlan {
	if pl := ps.last; pl != nil && pl.layout == im.Layout() && pl.schema == sc {
		return pl
	}
	pl := &imagePlan{layout: im.Layout(), schema: sc, pos: make([]int, len(p.Columns)), kinds: make([]bindKind, len(p.Columns))}
	for i, c := range p.Columns {
		pl.pos[i] = im.Layout().Pos(c.Source)
		pl.kinds[i] = kindOf(sc, c.Source)
		if c.Computed() && c.Expr != nil {
			if pl.args == nil {
				pl.args = make([][]int, len(p.Columns))
			}
			pl.args[i] = make([]int, 0, len(c.Expr.Columns()))
			for _, name := range c.Expr.Columns() {
				pl.args[i] = append(pl.args[i], im.Layout().Pos(name))
			}
		}
	}
	for _, j := range p.Joins {
		pos := make([]int, len(j.On))
		for i, on := range j.On {
			pos[i] = im.Layout().Pos(on.Child)
		}
		pl.joins = append(pl.joins, pos)
	}
	ps.last = pl
	return pl
}
