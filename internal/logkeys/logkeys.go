// Package logkeys is the slog.Handler in front of readside's text and JSON
// handlers: every line it passes on has each key once, and in JSON mode
// every value encodes.
//
// slog's own handlers write what they are given: a logger made with
// With("component", "tailer") and then With("component", "binlog") writes
// the key twice, which log pipelines (Loki, Elasticsearch) resolve each in
// their own way; and the JSON handler writes a value json.Marshal refuses
// (go-mysql logs its whole BinlogSyncerConfig, func fields included) as
// "!ERROR:json: …". Here the innermost value of a key wins — the binlog
// client's lines say component=binlog, the Kafka client's component=kafka,
// which is what docs/operations.md lists and filters match — and a value
// that does not encode is replaced by a string saying why it is not logged.
// Printing it instead (as the text handler's %+v does) would put whatever a
// library's struct holds into the log.
package logkeys

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"slices"
)

// builtin are the keys the handlers write for every record; an attribute of
// the same name is renamed (key + "_attr") so the line keeps one of each.
var builtin = []string{slog.TimeKey, slog.LevelKey, slog.MessageKey, slog.SourceKey}

// Handler de-duplicates keys before next sees a record. It keeps the
// attributes and groups of With/WithGroup itself and hands next whole
// records, so next is never given WithAttrs.
type Handler struct {
	next slog.Handler
	json bool
	// frames[0] is the top level; each WithGroup opens another.
	frames []frame
}

type frame struct {
	group string
	attrs []slog.Attr
}

var _ slog.Handler = (*Handler)(nil)

// New returns a Handler writing through next. checkJSON: next writes JSON,
// so values json.Marshal refuses are replaced.
func New(next slog.Handler, checkJSON bool) *Handler {
	return &Handler{next: next, json: checkJSON, frames: []frame{{}}}
}

func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	c := h.clone()
	last := &c.frames[len(c.frames)-1]
	last.attrs = append(slices.Clip(last.attrs), as...)
	return c
}

func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := h.clone()
	c.frames = append(c.frames, frame{group: name})
	return c
}

// clone copies the frame list; the attribute slices are shared and only
// ever appended to after slices.Clip, so siblings never see each other's.
func (h *Handler) clone() *Handler {
	c := *h
	c.frames = slices.Clone(h.frames)
	return &c
}

func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	inner := make([]slog.Attr, 0, len(h.frames[len(h.frames)-1].attrs)+r.NumAttrs())
	inner = append(inner, h.frames[len(h.frames)-1].attrs...)
	r.Attrs(func(a slog.Attr) bool {
		inner = append(inner, a)
		return true
	})
	// Innermost group first: each becomes one attribute of its parent.
	for i := len(h.frames) - 1; i > 0; i-- {
		as := h.unique(inner)
		parent := h.frames[i-1].attrs
		inner = append(slices.Clip(parent), slog.Attr{}) // placeholder for the group
		if len(as) == 0 {
			inner = inner[:len(inner)-1] // slog drops empty groups
			continue
		}
		inner[len(inner)-1] = slog.Attr{Key: h.frames[i].group, Value: slog.GroupValue(as...)}
	}
	top := h.unique(inner)
	for i, a := range top {
		if slices.Contains(builtin, a.Key) {
			top[i].Key = a.Key + "_attr"
		}
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(top...)
	return h.next.Handle(ctx, out)
}

// unique resolves as, inlines groups with an empty key (as slog does),
// drops empty attributes and keeps one attribute per key: the last, at the
// place of the first.
func (h *Handler) unique(as []slog.Attr) []slog.Attr {
	out := make([]slog.Attr, 0, len(as))
	at := make(map[string]int, len(as))
	var add func(a slog.Attr)
	add = func(a slog.Attr) {
		a.Value = a.Value.Resolve()
		if a.Equal(slog.Attr{}) {
			return
		}
		if a.Value.Kind() == slog.KindGroup {
			g := a.Value.Group()
			if a.Key == "" {
				for _, m := range g {
					add(m)
				}
				return
			}
			if g = h.unique(g); len(g) == 0 {
				return
			}
			a.Value = slog.GroupValue(g...)
		} else if h.json {
			a.Value = encodable(a.Value)
		}
		if i, ok := at[a.Key]; ok {
			out[i] = a
			return
		}
		at[a.Key] = len(out)
		out = append(out, a)
	}
	for _, a := range as {
		add(a)
	}
	return out
}

// encodable is v, or a string in its place when the JSON handler could not
// encode it: NaN and ±Inf as their names, other values as why they are not
// logged. Errors that are not json.Marshalers are written as their message
// by the handler and always encode.
//
// A duration is written as its text ("1.5s", as in text mode): slog's
// JSON handler writes its nanoseconds, a number no reader takes for time.
func encodable(v slog.Value) slog.Value {
	switch v.Kind() {
	case slog.KindDuration:
		return slog.StringValue(v.Duration().String())
	case slog.KindFloat64:
		if f := v.Float64(); math.IsNaN(f) || math.IsInf(f, 0) {
			return slog.StringValue(v.String())
		}
		return v
	case slog.KindAny:
	default:
		return v
	}
	x := v.Any()
	if _, ok := x.(error); ok {
		if _, m := x.(json.Marshaler); !m {
			return v
		}
	}
	if _, err := json.Marshal(x); err != nil {
		return slog.StringValue("not logged: " + err.Error())
	}
	return v
}
