package projections

import (
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/readside/readside/event"
)

// TestFillAdded: an event lacking a column whose default is NULL gets a
// null for it (both images, its other values kept); an event that has it,
// another topic's, and a column with another default are left alone.
func TestFillAdded(t *testing.T) {
	p := &Projection{Topic: "t.a", added: new(atomic.Pointer[addedColumns])}
	p.noteAddedColumns(map[string]*sourceTable{})
	p.added.Store(&addedColumns{
		nullable: map[string][]string{"t.a": {"note", "team"}},
		defaults: map[string]map[string]string{"t.a": {"prio": "DEFAULT 3"}},
		layouts:  map[layoutKey]extended{},
	})
	old := event.ImageFrom([]string{"id", "note"}, []json.RawMessage{json.RawMessage("1"), json.RawMessage(`"x"`)})
	e := event.Event{Before: old, After: event.ImageFrom([]string{"id"}, []json.RawMessage{json.RawMessage("2")})}
	p.fillAdded("t.a", &e)
	if got := e.Before.Map(); len(got) != 3 || string(got["note"]) != `"x"` || string(got["team"]) != "null" || string(got["id"]) != "1" {
		t.Errorf("before: %s", got)
	}
	if got := e.After.Map(); len(got) != 3 || string(got["note"]) != "null" || string(got["team"]) != "null" || string(got["id"]) != "2" {
		t.Errorf("after: %s", got)
	}
	full := event.ImageFrom([]string{"id", "note", "team"}, []json.RawMessage{json.RawMessage("1"), json.RawMessage("null"), json.RawMessage(`"b"`)})
	e = event.Event{After: full}
	p.fillAdded("t.a", &e)
	if e.After != full {
		t.Errorf("an image with every column was replaced")
	}
	other := event.ImageFrom([]string{"id"}, []json.RawMessage{json.RawMessage("1")})
	e = event.Event{After: other}
	p.fillAdded("t.b", &e)
	if e.After != other {
		t.Errorf("another topic's image was filled")
	}
	if got := p.addedDefault("t.a", "prio"); got != "DEFAULT 3" {
		t.Errorf("addedDefault(prio) = %q", got)
	}
	if got := p.addedDefault("t.a", "gone"); got != "" {
		t.Errorf("addedDefault of a column the source lacks = %q, want empty", got)
	}
}
