// Package vitessdiff checks readside's shard routing against Vitess's own
// xxhash vindex and key-range code (vitess.io/vitess). It is a module of
// its own so that readside's go.mod does not carry Vitess; `make test`
// runs it (`make test-vitess`).
package vitessdiff
