package projections

import (
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/readside/readside/event"
)

func imageOf(names []string, vals ...string) *event.Image {
	raw := make([]json.RawMessage, len(vals))
	for i, v := range vals {
		raw[i] = json.RawMessage(v)
	}
	return event.ImageFrom(names, raw)
}

// TestFillAdded: an event lacking a column whose default is NULL gets a
// null for it (both images, its other values kept); an event that has it
// and another topic's are left alone; so is one that holds a column the
// table no longer has (a rename: the values are there under the old
// name), and its stop says so; a column with another default stops with
// the source's definition; one the table lacks is no concern of these.
func TestFillAdded(t *testing.T) {
	p := &Projection{Name: "P", Topic: "t.a", SourceDB: "db", SourceTbl: "a", added: new(atomic.Pointer[addedColumns])}
	p.noteAddedColumns(map[string]*sourceTable{"db.a": {
		types:    map[string]string{"id": "int", "note": "text", "team": "text", "prio": "int"},
		columns:  []string{"id", "note", "team", "prio"},
		defaults: map[string]string{"id": "NOT NULL, no default", "prio": "DEFAULT 3", "note": nullDefaultMark, "team": nullDefaultMark},
	}})
	e := event.Event{Before: imageOf([]string{"id", "note"}, "1", `"x"`), After: imageOf([]string{"id"}, "2")}
	p.fillAdded("t.a", &e, new(addedMemo))
	if got := e.Before.Map(); len(got) != 3 || string(got["note"]) != `"x"` || string(got["team"]) != "null" || string(got["id"]) != "1" {
		t.Errorf("before: %s", got)
	}
	if got := e.After.Map(); len(got) != 3 || string(got["note"]) != "null" || string(got["team"]) != "null" || string(got["id"]) != "2" {
		t.Errorf("after: %s", got)
	}
	full := imageOf([]string{"id", "note", "team"}, "1", "null", `"b"`)
	e = event.Event{After: full}
	p.fillAdded("t.a", &e, new(addedMemo))
	if e.After != full {
		t.Errorf("an image with every column was replaced")
	}
	other := imageOf([]string{"id"}, "1")
	e = event.Event{After: other}
	p.fillAdded("t.b", &e, new(addedMemo))
	if e.After != other {
		t.Errorf("another topic's image was filled")
	}
	renamed := imageOf([]string{"id", "remark"}, "1", `"r"`)
	e = event.Event{After: renamed}
	p.fillAdded("t.a", &e, new(addedMemo))
	if e.After != renamed {
		t.Errorf("an image holding a column the table no longer has (remark, renamed to note?) was filled: %s", e.After.Map())
	}
	// One memo over a run: the layouts alternate, each image as its own.
	memo := new(addedMemo)
	for i := range 4 {
		im := imageOf([]string{"id"}, "7")
		if i%2 == 1 {
			im = full
		}
		e = event.Event{After: im}
		p.fillAdded("t.a", &e, memo)
		if got := e.After.Map(); (i%2 == 0) != (len(got) == 3 && string(got["team"]) == "null" && string(got["id"]) == "7") || (i%2 == 1 && e.After != full) {
			t.Errorf("run image %d: %s", i, got)
		}
	}
	// A second layout with another gone column: the stop names both.
	e = event.Event{After: imageOf([]string{"id", "legacy"}, "1", "2")}
	p.fillAdded("t.a", &e, new(addedMemo))
	reason := errors.New("missing")
	var stop *StopError
	if err := p.addedStop("t.a", "note", "db.a", "projections.P.columns.note", reason); !errors.As(err, &stop) ||
		!strings.Contains(stop.Reason.Error(), "is missing from events that hold column(s) remark, legacy the source no longer has: if note is one of them renamed") {
		t.Errorf("the stop after a rename: %v", err)
	}
	if err := p.addedStop("t.a", "prio", "db.a", "projections.P.columns.prio", reason); !errors.As(err, &stop) ||
		!strings.Contains(stop.Reason.Error(), "missing from events written before an ALTER TABLE added it (the source has it now, DEFAULT 3)") ||
		!strings.Contains(stop.Fix, "readside snapshot --table db.a --wait") {
		t.Errorf("the stop of a column added with a default: %v", err)
	}
	if err := p.addedStop("t.a", "gone", "db.a", "projections.P.columns.gone", reason); err != nil {
		t.Errorf("a column the table does not have: %v, want nil (the dropped-column stop)", err)
	}
}

// TestNoFillOverForeignTopics: over another tool's topics (input.kind:
// debezium) a column missing from an event is never filled: the
// connector may leave it out of every event.
func TestNoFillOverForeignTopics(t *testing.T) {
	p := &Projection{Name: "P", Topic: "t.a", SourceDB: "db", SourceTbl: "a", foreignTopics: true, added: new(atomic.Pointer[addedColumns])}
	p.noteAddedColumns(map[string]*sourceTable{"db.a": {columns: []string{"id", "note"}, defaults: map[string]string{"id": "NOT NULL, no default", "note": nullDefaultMark}}})
	im := imageOf([]string{"id"}, "1")
	e := event.Event{After: im}
	p.fillAdded("t.a", &e, new(addedMemo))
	if e.After != im {
		t.Errorf("filled over foreign topics: %s", e.After.Map())
	}
}

// TestExcludedColumnsAreNotSourceColumns: a column source.exclude_columns
// names is not a column of the table to the projection's checks (no event
// carries it: the checks name it), and never filled as added later.
func TestExcludedColumnsAreNotSourceColumns(t *testing.T) {
	st := &sourceTable{types: map[string]string{"id": "int", "email": "text"}, nullable: map[string]bool{"email": true},
		columns: []string{"id", "email"}, defaults: map[string]string{"id": "NOT NULL, no default", "email": nullDefaultMark}}
	st.exclude([]string{"db.other.email", "db.a.email"}, "db.a.")
	if ok, why := st.has("email"); ok || why != " (email is in source.exclude_columns: no event carries it)" {
		t.Errorf("has(email) = %v %q", ok, why)
	}
	if _, ok := st.defaults["email"]; ok || len(st.columns) != 1 {
		t.Errorf("email still listed: %+v", st)
	}
}
