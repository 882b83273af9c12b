package cdc

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-mysql-org/go-mysql/replication"
)

// The reader reads and encodes the chunks of the head snapshot task ahead
// of the stream, so that the round trips of a chunk (its table's columns,
// two watermark writes, the SELECT) and the encoding of its rows overlap
// the stream's wait for the high watermark before it and the producing of
// the chunks before that. The stream publishes chunks in the order they
// were read, each at its own high watermark, as before.
//
// Order is what keeps DBLog's guarantee: the reader announces a chunk
// (its id) to the stream before writing its low watermark, so the stream
// knows every watermark it meets; it writes a chunk's low watermark only
// after the previous chunk's high watermark is committed, so at most one
// chunk is between its watermarks at any point of the binlog; and it
// hands over the rows before writing the high watermark, so they are there
// when the stream meets it.

// chunkRead, when set (by tests), is called with the key of a chunk's
// first row once it is read and before the chunk's high watermark is
// written: a change it makes lands between the chunk's watermarks, after
// the chunk's read view.
var chunkRead func(table string, firstKey [][]byte)

// snapshotReadAhead bounds the chunks read and not yet published (the
// memory of a snapshot: about snapshotReadAhead × chunk_rows encoded rows).
const snapshotReadAhead = 3

// chunk is one chunk of a snapshot: filled by the reader, then published
// by the stream.
type chunk struct {
	id       string
	task     taskRef
	db, name string // the task's table, known when the chunk is announced
	// opensAtPrev: the chunk's window opens at the previous chunk's high
	// watermark; the task's first chunk writes a low watermark of its own.
	opensAtPrev bool
	table       *table // the reader's until it starts the encoder

	// The stream's, from the low watermark on.
	lowSeen bool
	dropped map[string]bool // keys a live change touched between the watermarks

	// The reader's until it starts the encoder.
	lastKey  [][]byte
	complete bool // fewer rows than asked: the table is done after this chunk

	// The encoder's until read is closed; the stream's after.
	read   chan struct{}
	keys   [][]byte // encoded keys in primary key order
	afters [][]byte // each row's after image, same order
	err    error    // a row readside cannot encode, or the read failed after the high watermark
	// bufs hold keys and afters; bufPool takes them back (releaseBufs).
	bufs    []*[slabChunk]byte
	bufPool *sync.Pool
}

// releaseBufs hands the buffers of the chunk's keys and images back to
// the reader, for the encoding of a later chunk: only once nothing reads
// c.keys or c.afters any more (a chunk's 10,000 narrow rows are ~1.6 MB
// of them, allocated and cleared again for every chunk otherwise).
func (c *chunk) releaseBufs() {
	(&slab{pool: c.bufPool}).recycle(c.bufs)
	c.bufs, c.keys, c.afters = nil, nil, nil
}

// taskRef names the task a chunk belongs to.
type taskRef struct {
	id           uint64
	table, where string
}

func refOf(t SnapshotTask) taskRef { return taskRef{t.ID, t.Table, t.Where} }

// chunkReader is the goroutine reading one task's chunks.
type chunkReader struct {
	task   taskRef
	chunks chan *chunk   // announced, in order, before their low watermark
	slots  chan struct{} // one per chunk read and not yet published
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine is over; err is then set
	err    error
}

// startReader starts reading the head task's chunks when nothing reads
// them, and stops a reader whose task is no longer the head one
// (cancelled, failed or done).
func (s *stream) startReader(ctx context.Context) {
	if s.reader != nil && (len(s.snapshots) == 0 || s.reader.task != refOf(s.snapshots[0])) {
		s.stopReader()
	}
	if s.reader != nil || len(s.snapshots) == 0 {
		return
	}
	task := s.snapshots[0]
	topic, ok := s.captured[task.Table]
	if !ok {
		s.t.log.Warn("snapshot request for a table that is not in source.tables; ignored", "table", task.Table)
		s.snapshots = s.snapshots[1:]
		return
	}
	rctx, cancel := context.WithCancel(ctx)
	r := &chunkReader{task: refOf(task), chunks: make(chan *chunk, snapshotReadAhead), slots: make(chan struct{}, snapshotReadAhead),
		cancel: cancel, done: make(chan struct{})}
	cfg := s.t.cfg.Source
	rd := &chunkReads{src: s.src, task: task, topic: topic, excluded: s.excluded[task.Table], keyCols: s.keys[task.Table],
		signalDB: cfg.Snapshot.SignalDB, serverID: cfg.ServerID, limit: cfg.Snapshot.ChunkRows, free: make(chan *rawRows, snapshotReadAhead+1),
		bufs: &sync.Pool{}}
	go func() {
		defer close(r.done)
		r.err = r.run(rctx, task.After, rd)
	}()
	s.reader = r
}

// run reads chunks from after on until one is the last or ctx ends. The
// first chunk's window opens at a low watermark of its own, each later
// one's at the high watermark of the chunk before: that write already
// lies after the previous read and before the next, which is all a low
// watermark has to.
//
// The table's columns are read once, when the reader starts: the stream
// stops the reader at a DDL that may touch the table (ddlMayTouch), which
// drops every chunk in flight, and the next reader reads them again with
// the columns as they are after it. A chunk's SELECT can only run with
// columns older than the table when a DDL committed before it, and that
// DDL then lies in the binlog before the chunk's high watermark: the
// stream meets it before it would publish the chunk.
func (r *chunkReader) run(ctx context.Context, after [][]byte, rd *chunkReads) error {
	c := r.announce(ctx, false)
	if c == nil {
		return nil
	}
	tbl, err := rd.columns(ctx)
	if err != nil {
		return quiet(ctx, err)
	}
	if err := rd.watermark(ctx, c.id, "low"); err != nil {
		return quiet(ctx, err)
	}
	for {
		raw, err := rd.read(ctx, c, &tbl, after)
		if err != nil {
			return quiet(ctx, err)
		}
		// The next chunk is announced before this one's rows are handed
		// over: the stream, once it has published this chunk at its high
		// watermark, finds the next one there to open its window.
		var nc *chunk
		if !c.complete {
			nc = r.announce(ctx, true)
		}
		go c.encode(raw, rd.task.Table, rd.free, rd.bufs)
		switch {
		case c.complete:
			return nil
		case nc == nil:
			return nil // ctx ended
		}
		after, c = c.lastKey, nc
	}
}

// announce hands the stream a new chunk once a slot is free: nil when
// ctx ends first.
func (r *chunkReader) announce(ctx context.Context, opensAtPrev bool) *chunk {
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	var idb [16]byte
	_, _ = rand.Read(idb[:])
	c := &chunk{id: hex.EncodeToString(idb[:]), task: r.task, opensAtPrev: opensAtPrev, dropped: map[string]bool{}, read: make(chan struct{})}
	c.db, c.name, _ = strings.Cut(r.task.table, ".")
	r.chunks <- c // never blocks: a slot is held
	return c
}

// quiet is err, or nil once ctx ended (the reader was stopped).
func quiet(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// stopReader ends the reader and forgets its chunks: watermarks met later
// are then of chunks the stream does not know, and ignored.
func (s *stream) stopReader() {
	if s.reader == nil {
		return
	}
	s.reader.cancel()
	<-s.reader.done
	s.reader, s.inflight = nil, nil
}

// snapshotDDL stops the reader at a DDL that may touch its table: the
// chunks in flight were read with the columns from before it (the one
// whose window the DDL is in, and the ones read after it with columns
// kept from before), and the next reader reads them again with the
// columns as they are now, from the last published chunk on.
func (s *stream) snapshotDDL(e *replication.QueryEvent, text string, textErr error) {
	if textErr != nil || text == "" {
		text = string(e.Query) // names are ASCII in nearly every charset
	}
	table := s.reader.task.table
	if !ddlMayTouch(text, table) {
		return
	}
	s.t.log.Info("DDL of the table being snapshotted: its chunks in flight are read again with its new columns", "table", table, "file", s.file)
	s.stopReader()
}

// ddlMayTouch reports whether a DDL statement may change table (db.name):
// it names the table, with or without its database, or its database (a
// DROP DATABASE). Unsure is yes: a needless restart of the reader costs a
// few chunks read again, a missed one publishes rows with the columns of
// before.
func ddlMayTouch(sql, table string) bool {
	db, name, _ := strings.Cut(table, ".")
	for _, tok := range tokenize(sql) {
		if strings.EqualFold(tok, name) || strings.EqualFold(tok, db) || strings.EqualFold(tok, table) {
			return true
		}
	}
	return false
}

// readerOver is ready when the reader failed: its done channel, or nil
// (never ready) without a reader or when it read its task's last chunk,
// which then waits for the stream to publish it.
func (s *stream) readerOver() <-chan struct{} {
	if s.reader == nil {
		return nil
	}
	select {
	case <-s.reader.done:
		if s.reader.err == nil {
			return nil
		}
	default:
	}
	return s.reader.done
}

// readerFailed takes up a reader that is over: an error of the request
// fails the task (chunkFailed); any other is the stream's, which retries.
// A reader over without an error read the task's last chunk.
func (s *stream) readerFailed(ctx context.Context) error {
	r := s.reader
	if r == nil {
		return nil
	}
	select {
	case <-r.done:
	default:
		return nil
	}
	if r.err == nil {
		return nil
	}
	s.stopReader()
	if len(s.snapshots) == 0 || refOf(s.snapshots[0]) != r.task {
		return nil
	}
	return s.chunkFailed(ctx, r.err)
}

// take moves the chunks the reader announced into the stream's list.
func (s *stream) take() {
	if s.reader == nil {
		return
	}
	for {
		select {
		case c := <-s.reader.chunks:
			s.inflight = append(s.inflight, c)
		default:
			return
		}
	}
}

// watermarked is the chunk in flight a watermark row names: the head one,
// or nil for a chunk the stream does not know (one of a stream before a
// restart, or of a reader stopped since). A watermark of a later chunk
// while the head one waits would mean the windows overlap: the stream
// stops rather than publish what it cannot vouch for.
func (s *stream) watermarked(id string) (*chunk, error) {
	s.take()
	for i, c := range s.inflight {
		if c.id != id {
			continue
		}
		if i > 0 {
			return nil, fmt.Errorf("snapshot chunk %s met a watermark before chunk %s was published: the chunks' windows overlap (a bug); the stream restarts from its checkpoint", id, s.inflight[0].id)
		}
		return c, nil
	}
	return nil, nil
}

// popChunk takes the head chunk in flight, waiting for its rows to be
// encoded (read before its high watermark was written, encoded since).
func (s *stream) popChunk(ctx context.Context) (*chunk, error) {
	c := s.inflight[0]
	select {
	case <-c.read:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if c.err != nil {
		return nil, c.err
	}
	s.inflight = s.inflight[1:]
	<-s.reader.slots
	return c, nil
}

// chunkReads is what the reader reads one task's chunks with.
type chunkReads struct {
	src      *sourceDB
	task     SnapshotTask // its After is where the reader started
	topic    string
	excluded map[string]bool
	keyCols  []string
	signalDB string
	serverID uint32
	limit    int
	free     chan *rawRows // buffers of chunks encoded, for the next reads
	bufs     *sync.Pool    // of the encoders' slab chunks, handed back by chunks published
}

// columns reads the task's table's columns and key. The table is then
// shared by the encoders of its chunks, which run at once: nothing of it
// is built lazily after this.
func (rd *chunkReads) columns(ctx context.Context) (*table, error) {
	db, name, _ := strings.Cut(rd.task.Table, ".")
	t, err := rd.src.schemaTable(ctx, db, name, rd.topic, rd.excluded, rd.keyCols)
	if err != nil {
		return nil, err
	}
	t.all()
	return t, nil
}

// read reads chunk c, the rows after the key after, with the columns
// *tbl: the SELECT, and the high watermark written once the read view is
// open, while the rest of the rows arrive. It returns the rows, row after
// row, once they are in and the watermark is committed: the next chunk's
// SELECT only after that.
//
// A SELECT the source refuses as it would refuse a wrong request (a column
// it no longer has) is tried once more with the columns read again into
// *tbl: they were read when the reader started, and a DDL since (which the
// stream has not met yet) would otherwise fail the whole request.
func (rd *chunkReads) read(ctx context.Context, c *chunk, tbl **table, after [][]byte) (*rawRows, error) {
	t := rd.task
	t.After = after
	query, args := chunkQuery(*tbl, &t, rd.limit)
	rows, err := rd.src.db.QueryContext(ctx, query, args...)
	if err != nil && isRequestError(err) {
		fresh, ferr := rd.columns(ctx)
		if ferr != nil {
			return nil, ferr
		}
		*tbl = fresh
		query, args = chunkQuery(fresh, &t, rd.limit)
		rows, err = rd.src.db.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return nil, err
	}
	c.table = *tbl
	// The rows are copied as they are scanned (vals hold a row only until
	// the next Scan) into the buffer of a chunk encoded before, and encoded
	// by a goroutine of their own: the next chunk's reads need not wait for
	// the encoding.
	ncol := len(c.table.columns)
	vals := make([]sql.RawBytes, ncol)
	ptrs := make([]any, ncol)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var raw *rawRows
	select {
	case raw = <-rd.free:
		raw.reset(ncol)
	default:
		raw = newRawRows(ncol, rd.limit)
	}
	// The high watermark is written while the rest of the rows arrive:
	// InnoDB opened the statement's read view before it returned the first
	// row, and every row comes from that view, so the read lies between
	// the watermarks. A chunk whose high watermark is written gets its
	// c.read closed whatever happens (encoded, or c.err), as the stream
	// waits for it when it meets that watermark.
	var high chan error
	startHigh := func() {
		if chunkRead != nil && raw.rows() > 0 {
			var first [][]byte
			for _, i := range c.table.pk {
				first = append(first, slices.Clone(vals[i]))
			}
			chunkRead(rd.task.Table, first)
		}
		high = make(chan error, 1)
		go func() { high <- rd.watermark(ctx, c.id, "high") }()
	}
	fail := func(err error) error {
		if high != nil {
			c.err = err
			close(c.read)
			<-high
		}
		return err
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			rows.Close()
			return nil, fail(err)
		}
		for _, v := range vals {
			raw.add(v)
		}
		if high == nil {
			startHigh()
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fail(err)
	}
	if high == nil { // no rows: the statement is over
		startHigh()
	}
	n := raw.rows()
	c.complete = n < rd.limit
	if n > 0 {
		raw.row(n-1, vals)
		for _, i := range c.table.pk {
			c.lastKey = append(c.lastKey, slices.Clone([]byte(vals[i])))
		}
	}
	if err := <-high; err != nil {
		c.err = err
		close(c.read)
		return nil, err
	}
	return raw, nil
}

// encode encodes the chunk's rows (key and after image of each), then
// hands raw's buffer on to a later read (free) and closes c.read.
func (c *chunk) encode(raw *rawRows, table string, free chan<- *rawRows, bufs *sync.Pool) {
	defer close(c.read)
	// Keys and images share a few large buffers from bufs: no allocation
	// per row, and none per chunk once chunks published hand theirs back.
	buf := slab{pool: bufs}
	defer func() {
		c.bufs, c.bufPool = buf.seal(), bufs
		select {
		case free <- raw:
		default:
		}
	}()
	n := raw.rows()
	vals := make([]sql.RawBytes, raw.ncol)
	c.keys, c.afters = make([][]byte, 0, n), make([][]byte, 0, n)
	for r := range n {
		raw.row(r, vals)
		key, err := c.table.appendSQLKey(buf.room(64), vals)
		if err != nil {
			c.err = &FatalError{fmt.Errorf("snapshot of %s: %w", table, err)}
			return
		}
		c.keys = append(c.keys, buf.keep(key))
		img, err := c.table.appendSQLRow(buf.room(256), vals)
		if err != nil {
			c.err = &FatalError{fmt.Errorf("snapshot of %s: %w", table, err)}
			return
		}
		c.afters = append(c.afters, buf.keep(img))
	}
}

// watermark writes a watermark row. Its values are a number, the chunk's
// hex id and "low" or "high", spelled out in the statement: one round
// trip, where a statement with parameters is prepared first.
func (rd *chunkReads) watermark(ctx context.Context, id, mark string) error {
	_, err := rd.src.db.ExecContext(ctx, fmt.Sprintf("REPLACE INTO %s.%s (server_id, chunk, mark, at) VALUES (%d, '%s', '%s', NOW(6))",
		quoteIdent(rd.signalDB), watermarkTable, rd.serverID, id, mark))
	if err != nil {
		return fmt.Errorf("writing snapshot %s watermark: %w", mark, err)
	}
	return nil
}

// rawRows are a chunk's values as read, end to end in one buffer: no
// pointer per value for the garbage collector to follow, and the buffer
// serves a later chunk once this one is encoded.
type rawRows struct {
	ncol int
	data []byte
	ends []int // where each value ends in data, row after row; -1-end for a NULL
}

func newRawRows(ncol, rows int) *rawRows {
	return &rawRows{ncol: ncol, data: make([]byte, 0, 64<<10), ends: make([]int, 0, rows*ncol)}
}

// reset empties r for a chunk of ncol columns, keeping its buffers.
func (r *rawRows) reset(ncol int) {
	r.ncol, r.data, r.ends = ncol, r.data[:0], r.ends[:0]
}

// add appends the next value (nil for NULL).
func (r *rawRows) add(v sql.RawBytes) {
	r.data = append(r.data, v...)
	if v == nil {
		r.ends = append(r.ends, -1-len(r.data))
		return
	}
	r.ends = append(r.ends, len(r.data))
}

// rows is the number of rows added.
func (r *rawRows) rows() int { return len(r.ends) / max(r.ncol, 1) }

// row sets vals (ncol long) to row i's values: views of r's buffer, valid
// until r is reset; nil for NULL, empty but not nil for an empty string.
func (r *rawRows) row(i int, vals []sql.RawBytes) {
	at := func(k int) int {
		if e := r.ends[k]; e >= 0 {
			return e
		}
		return -1 - r.ends[k]
	}
	start := 0
	if i > 0 {
		start = at(i*r.ncol - 1)
	}
	for j := range vals {
		k := i*r.ncol + j
		end := at(k)
		if r.ends[k] < 0 {
			vals[j] = nil
		} else {
			vals[j] = r.data[start:end:end] // data is never nil: '' stays ''
		}
		start = end
	}
}
