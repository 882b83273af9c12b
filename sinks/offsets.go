package sinks

// Offsets and watermarks: where a projection resumes, and how far into
// the source its rows are, both written with the rows.

import (
	"maps"
	"slices"

	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

// offsetStatement is the upsert of consumed offsets: they only ever move
// forward.
func offsetStatement(d dialect) multiRow {
	return multiRow{
		head: "INSERT INTO `_readside_offsets` (projection, topic, part, next_offset) VALUES ",
		row:  "(?, ?, ?, ?)",
		sep:  ", ",
		tail: d.onDuplicate() + "next_offset = GREATEST(next_offset, " + d.newRow("next_offset") + ")",
	}
}

// watermarkStatement is the upsert of applied source positions: the GTID
// and commit time go with the highest version.
func watermarkStatement(d dialect) multiRow {
	newer := d.newRow("version") + " > version"
	return multiRow{
		head: "INSERT INTO `_readside_watermarks` (projection, topic, part, gtid, version, source_ts) VALUES ",
		row:  "(?, ?, ?, ?, ?, ?)",
		sep:  ", ",
		tail: d.onDuplicate() + "gtid = IF(" + newer + ", " + d.newRow("gtid") + ", gtid), source_ts = IF(" + newer + ", " + d.newRow("source_ts") +
			", source_ts), version = GREATEST(version, " + d.newRow("version") + ")",
	}
}

// offsets records the next offset to consume of each partition, in one
// statement; they only ever move forward.
func (a *applier) offsets(offs event.Offsets) error {
	var args []any
	rows := 0
	for _, topic := range slices.Sorted(maps.Keys(offs)) {
		for _, part := range slices.Sorted(maps.Keys(offs[topic])) {
			args = append(args, a.p.OffsetsName(), topic, part, offs[topic][part])
			rows++
		}
	}
	if rows == 0 {
		return nil
	}
	return a.exec(a.st.offsets.text(rows), args...)
}

// watermarks moves each partition's applied source position forward (the
// GTID and commit time go with the highest version).
func (a *applier) watermarks(marks map[string]map[int32]projections.Mark) error {
	var args []any
	rows := 0
	for _, topic := range slices.Sorted(maps.Keys(marks)) {
		for part, m := range marks[topic] {
			args = append(args, a.p.OffsetsName(), topic, part, m.GTID, m.Version, m.TS)
			rows++
		}
	}
	if rows == 0 {
		return nil
	}
	return a.exec(a.st.watermarks.text(rows), args...)
}
