package cdc

// Option is a runtime setting of a Tailer: what the process found out
// while starting, as opposed to Config, which holds only what the user
// wrote.
type Option func(*Tailer)

// EmbeddedBroker tells the tailer that it publishes to the embedded broker
// `readside run` started, whose commits are not atomic across partitions
// after a crash: the checkpoint then commits in a transaction of its own,
// after the events it covers (publisher.commitAsync).
func EmbeddedBroker() Option {
	return func(t *Tailer) { t.embedded = true }
}
