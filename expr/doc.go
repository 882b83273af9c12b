// Package expr is readside's expression language: the small typed SQL
// subset a projection may use wherever it names a value (columns, key,
// shard_by, where). Every expression has two meanings that must be equal
// byte for byte: Eval computes it in Go, in the projector, on a source
// row; SQL renders it as MySQL text, for verify and humans to compute the
// same read table on the source. Each function is defined by its MySQL
// behaviour and proven equal by a differential test against the real
// server (differential_test.go); a function that cannot be made identical
// is not offered.
//
// Expressions are typed when a projection is planned, against the source
// table's column definitions: Check gives the result's exact MySQL type,
// which becomes the read column's definition.
//
// No I/O here: the package is pure logic.
package expr
