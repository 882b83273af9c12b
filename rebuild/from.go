package rebuild

// `replay --from`: parsing the operator's starting point and resolving it
// against what the broker holds, before anything is stored. A request for
// a partition that does not exist or an offset the broker does not have
// would otherwise wait in _readside_replay_requests for good (no
// projector is ever assigned partition 99) or make the projector fetch
// out of range.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/event"
	"github.com/readside/readside/projections"
)

const fromUsage = "want earliest, an RFC3339 time (e.g. 2026-01-02T15:04:05Z) or partition:offset items (e.g. 0:120,3:0; topic/partition:offset for a joined parent's or a child table's topic)"

// logRange is what the broker holds of one partition: offsets start up to
// end (the high watermark, the offset the next record gets). Replaying
// from end replays nothing; from past it, the broker has no records.
type logRange struct{ start, end int64 }

type logRanges map[string]map[int32]logRange

// parseOffsets parses the partition:offset form of --from; an item
// without a topic names p's own topic.
func parseOffsets(p *projections.Projection, from string) (event.Offsets, error) {
	out := event.Offsets{}
	var problems []error
	for _, item := range strings.Split(from, ",") {
		item = strings.TrimSpace(item)
		topic, po := p.Topic, item
		if i := strings.LastIndex(item, "/"); i >= 0 {
			topic, po = item[:i], item[i+1:]
		}
		ps, os, ok := strings.Cut(po, ":")
		part, err1 := strconv.ParseInt(ps, 10, 32)
		off, err2 := strconv.ParseInt(os, 10, 64)
		if !ok || err1 != nil || err2 != nil || part < 0 || off < 0 {
			return nil, fmt.Errorf("--from %q: item %q is not partition:offset; %s", from, item, fromUsage)
		}
		if !slices.Contains(p.Topics(), topic) {
			problems = append(problems, fmt.Errorf("--from %q: topic %s is not consumed by projection %s (its topics: %s)", from, topic, p.Name, strings.Join(p.Topics(), ", ")))
			continue
		}
		if _, dup := out[topic][int32(part)]; dup {
			problems = append(problems, fmt.Errorf("--from %q: %s/%d is named twice: name each partition once", from, topic, part))
			continue
		}
		out.Set(topic, int32(part), off)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return out, nil
}

// checkOffsets reports every requested offset the broker cannot serve: a
// partition the topic does not have, an offset past its end or below its
// log start. Each problem names the partition and the valid range.
func checkOffsets(want event.Offsets, have logRanges) error {
	var problems []error
	for _, topic := range sortedKeys(want) {
		parts := want[topic]
		ids := make([]int32, 0, len(parts))
		for part := range parts {
			ids = append(ids, part)
		}
		slices.Sort(ids)
		for _, part := range ids {
			off := parts[part]
			r, ok := have[topic][part]
			switch {
			case !ok:
				problems = append(problems, fmt.Errorf("partition %d of %s does not exist: %s has partitions %s", part, topic, topic, partitionList(have[topic])))
			case off > r.end:
				problems = append(problems, fmt.Errorf("offset %d of %s/%d is past the end of the partition: its offsets run from %d to %d (from %d, the end, nothing is replayed)", off, topic, part, r.start, r.end, r.end))
			case off < r.start:
				problems = append(problems, fmt.Errorf("offset %d of %s/%d is below the partition's log start (retention removed what was before): its offsets run from %d to %d; replay from %d or use --from earliest", off, topic, part, r.start, r.end, r.start))
			}
		}
	}
	return errors.Join(problems...)
}

// partitionList renders a topic's partitions, "0-3" when they are
// contiguous from 0 (Kafka's case).
func partitionList(parts map[int32]logRange) string {
	if len(parts) == 0 {
		return "none"
	}
	ids := make([]int, 0, len(parts))
	for p := range parts {
		ids = append(ids, int(p))
	}
	sort.Ints(ids)
	if ids[0] == 0 && ids[len(ids)-1] == len(ids)-1 {
		if len(ids) == 1 {
			return "0 only"
		}
		return fmt.Sprintf("0-%d", len(ids)-1)
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// listRanges asks the broker for the start and end offsets of every
// partition of topics; a topic the broker does not have is an error.
func listRanges(ctx context.Context, adm *kadm.Client, topics []string) (logRanges, error) {
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("listing the start offsets of %s: %w", strings.Join(topics, ", "), err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("listing the end offsets of %s: %w", strings.Join(topics, ", "), err)
	}
	out := logRanges{}
	var problems []error
	for _, topic := range topics {
		if len(starts[topic]) == 0 || starts[topic][-1].Err != nil {
			problems = append(problems, fmt.Errorf("topic %s does not exist on the broker: the tailer creates it when it starts (readside run with this config)", topic))
			continue
		}
		out[topic] = map[int32]logRange{}
		for part, s := range starts[topic] {
			e, ok := ends[topic][part]
			if s.Err != nil || !ok || e.Err != nil {
				problems = append(problems, fmt.Errorf("listing the offsets of %s/%d: %w", topic, part, errors.Join(s.Err, e.Err)))
				continue
			}
			out[topic][part] = logRange{start: s.Offset, end: e.Offset}
		}
	}
	return out, errors.Join(problems...)
}

// ReplayOffsets turns --from into next offsets for p's partitions, checked
// against what the broker holds: earliest and a time resolve to an offset
// on every partition of p's topics; partition:offset items must name
// existing partitions and offsets the broker has.
func ReplayOffsets(ctx context.Context, brokers []string, p *projections.Projection, from string) (event.Offsets, error) {
	var (
		named event.Offsets
		at    time.Time
	)
	switch t, terr := time.Parse(time.RFC3339, from); {
	case from == "earliest":
	case terr == nil:
		at = t
	case strings.Contains(from, ":"):
		var err error
		if named, err = parseOffsets(p, from); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("--from %q: %s", from, fromUsage)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ranges, err := listRanges(ctx, adm, p.Topics())
	if err != nil {
		return nil, err
	}
	out := event.Offsets{}
	switch {
	case named != nil:
		if err := checkOffsets(named, ranges); err != nil {
			return nil, fmt.Errorf("--from %q: nothing was requested:\n%w", from, err)
		}
		return named, nil
	case at.IsZero():
		for topic, parts := range ranges {
			for part, r := range parts {
				out.Set(topic, part, r.start)
			}
		}
		return out, nil
	}
	return offsetsAt(ctx, adm, p, from, at)
}

// offsetsAt are, per partition of p's topics, the offset of the first
// record the broker stamped at or after at (record timestamps are the
// tailer's publish time, shortly after the commit).
func offsetsAt(ctx context.Context, adm *kadm.Client, p *projections.Projection, from string, at time.Time) (event.Offsets, error) {
	listed, err := adm.ListOffsetsAfterMilli(ctx, at.UnixMilli(), p.Topics()...)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing the offsets of %s at %s: %w", strings.Join(p.Topics(), ", "), from, err)
	}
	out := event.Offsets{}
	found := false
	listed.Each(func(o kadm.ListedOffset) {
		// Timestamp -1: no record at or after the time in this partition;
		// the offset is its end (nothing to replay there).
		found = found || o.Timestamp >= 0
		out.Set(o.Topic, o.Partition, o.Offset)
	})
	if !found {
		return nil, fmt.Errorf("--from %s: no record of %s was published at or after that time, so there is nothing to replay (is the time in the future, or off by a time zone? RFC3339 takes Z or an offset such as +02:00); nothing was requested", from, strings.Join(p.Topics(), ", "))
	}
	return out, nil
}
