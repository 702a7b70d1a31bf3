// Package gcpserver is a built-in target: go-control-plane's own xDS server
// (release v0.14.0) run unmodified over one of its caches, with the fixture
// API implemented on top of that cache.
//
// Two flavours exist because the caches, not the server, decide most of
// what goes on the wire: Snapshot (cache.SnapshotCache, per-node snapshots)
// and Linear (cache.MuxCache over one cache.LinearCache per type, global
// resources).
package gcpserver
