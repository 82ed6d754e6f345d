// Package cliflag holds the flag values shared by kbroker's commands: the
// binary (cmd/kbroker), the benchmark harness (internal/bench) and the
// admin CLI (internal/admincli). It is a leaf: standard library only, so
// each of them can import it without importing another.
//
// It must never import a kbroker package.
package cliflag
