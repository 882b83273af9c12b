package event

// Offsets are positions in Kafka partitions, by topic and partition: the
// offset after the last record a tailer published up to a checkpoint
// (Cut.Published), the next record a projection consumes (its batches and
// the sink's _readside_offsets), the ends of the topics a fill waits for.
type Offsets map[string]map[int32]int64

// Set records off as topic/part's.
func (o Offsets) Set(topic string, part int32, off int64) {
	if o[topic] == nil {
		o[topic] = map[int32]int64{}
	}
	o[topic][part] = off
}

// Min is, per partition both o and other have, the lower offset; a
// partition only one has is left out (a projector starts it from the
// beginning). It is how reading resumes over several shards or fills:
// from where the furthest-behind one stands.
func (o Offsets) Min(other Offsets) Offsets {
	out := Offsets{}
	for topic, parts := range o {
		for part, off := range parts {
			if theirs, ok := other[topic][part]; ok {
				out.Set(topic, part, min(off, theirs))
			}
		}
	}
	return out
}
