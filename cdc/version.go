package cdc

// Clock assigns versions to row changes.
//
// version = max(previous + 1, commit_seconds << 20)
//
// The counter travels in the checkpoint, so the versions are a pure function
// of the binlog after the checkpoint: a replay from a checkpoint gives every
// change the version it had the first time, and they keep increasing across
// restarts and GTID failover (the counter does not depend on the server).
// If the checkpoint is lost, a fresh start begins above every old version
// because the commit clock has moved on. version >> 20 is roughly the commit
// time in Unix seconds. The clock only runs ahead of commit time above about
// one million changes per second sustained. docs/design/version.md has the
// whole argument.
type Clock struct {
	last uint64
}

// VersionShift is how far the commit time is shifted into a version.
const VersionShift = 20

// NewClock resumes a clock from the last version a checkpoint recorded.
func NewClock(last uint64) *Clock { return &Clock{last: last} }

// Next returns the version of the next row change committed at
// commitSeconds (the binlog event header's timestamp).
func (c *Clock) Next(commitSeconds uint32) uint64 {
	v := max(c.last+1, uint64(commitSeconds)<<VersionShift)
	c.last = v
	return v
}

// Last is the last version handed out (what a checkpoint stores).
func (c *Clock) Last() uint64 { return c.last }
