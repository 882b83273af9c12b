package sinks

import (
	"maps"
	"slices"
	"strings"

	"github.com/readside/readside/projections"
)

// offsets records the next offset to consume of each partition, in one
// statement; they only ever move forward.
func (a *applier) offsets(offs projections.Offsets) error {
	var args []any
	rows := 0
	for _, topic := range slices.Sorted(maps.Keys(offs)) {
		for _, part := range slices.Sorted(maps.Keys(offs[topic])) {
			args = append(args, a.p.Name, topic, part, offs[topic][part])
			rows++
		}
	}
	if rows == 0 {
		return nil
	}
	row := "(?, ?, ?, ?)"
	err := a.exec("INSERT INTO `_readside_offsets` (projection, topic, part, next_offset) VALUES "+row+strings.Repeat(", "+row, rows-1)+
		" ON DUPLICATE KEY UPDATE next_offset = GREATEST(next_offset, VALUES(next_offset))", args...)
	return err
}

// watermarks moves each partition's applied source position forward (the
// GTID and commit time go with the highest version).
func (a *applier) watermarks(marks map[string]map[int32]projections.Mark) error {
	var args []any
	rows := 0
	for _, topic := range slices.Sorted(maps.Keys(marks)) {
		for part, m := range marks[topic] {
			args = append(args, a.p.Name, topic, part, m.GTID, m.Version, m.TS)
			rows++
		}
	}
	if rows == 0 {
		return nil
	}
	row := "(?, ?, ?, ?, ?, ?)"
	newer := "VALUES(version) > version"
	err := a.exec("INSERT INTO `_readside_watermarks` (projection, topic, part, gtid, version, source_ts) VALUES "+row+strings.Repeat(", "+row, rows-1)+
		" ON DUPLICATE KEY UPDATE gtid = IF("+newer+", VALUES(gtid), gtid), source_ts = IF("+newer+", VALUES(source_ts), source_ts), version = GREATEST(version, VALUES(version))", args...)
	return err
}
