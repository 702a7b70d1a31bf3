// Package gcpserver is a built-in target: go-control-plane's own xDS server
// (release v0.14.0) run unmodified over one of its caches, with the fixture
// API implemented on top of that cache.
//
// Two flavours exist because the caches, not the server, decide most of
// what goes on the wire:
//
//   - Snapshot: cache.SnapshotCache (ads=false), one snapshot per node id,
//     rebuilt whole on every fixture change (or batch), one
//     cache.NewResourcesWithTTL per type. Each type keeps its own version (a
//     per-node, per-type counter given to its NewResourcesWithTTL), bumped
//     once when that type's resources (or TTLs) change, however many changed
//     in a batch; setting identical content or deleting an unknown name bumps
//     nothing. Resources are node-scoped. Reset installs an empty snapshot
//     in which only the types that had resources get a new version
//     (ClearSnapshot would also forget the node's open watches, so open
//     streams would never see the deletions). Versions never repeat for a
//     type of a node.
//   - Linear: cache.MuxCache over one cache.LinearCache per type, keyed by
//     the request's type URL. Resources are global; Reset deletes what was
//     set under that node id and not also set by another node.
//
// The sotw and delta servers (pkg/server/{sotw,delta}/v3) and the caches run
// as released. Only the per-service dispatch of pkg/server/v3 is replaced
// (handlers, registered through wire.RegisterServices), because that package
// pulls in the separate go-control-plane/ratelimit module, which this module
// does not require. REST Fetch is not served.
//
// # Protocol behaviour (v0.14.0, file:line under pkg/)
//
// Confirmed by the tests of this package where marked (T).
//
// SotW nonces: a request of a type that already has a watch is dropped
// entirely, names included, when a response of that type was sent and the
// request's response_nonce differs from its nonce (server/sotw/v3/xds.go:111-121).
// An empty nonce after a response is therefore stale too. The names are
// applied once a request with the latest nonce arrives, so NONCE-8 holds.
// Nonces come from one counter per stream (server/sotw/v3/server.go:257) but
// staleness is judged per type (watches.go:228-236), so ADS nonces are
// per type; the first request of a type is never stale.
//
// Delta nonces: never checked (server/delta/v3/server.go:228-255); every
// request updates the subscription, so NONCE-12 holds (T).
//
// NACKs: error_detail is read nowhere in pkg/server or pkg/cache; a NACK is
// an ordinary request. Resources count as delivered when sent, not when
// ACKed (sotw/v3/server.go:266, delta/v3/server.go:147).
//   - SnapshotCache SotW: CreateWatch compares the request's version_info
//     with the snapshot version (cache/v3/simple.go:423-426); a NACK carries
//     the last accepted version, so the rejected snapshot is sent again at
//     once (simple.go:457-464), and again on every NACK: a real client loops (T).
//   - LinearCache SotW: no resend when the NACK carries a version; with an
//     empty version_info (nothing accepted yet) it replies regardless
//     (linear.go:436): the full set again for LDS/CDS, which loops as above,
//     an empty response for other types (linear.go:236-247).
//   - Delta (both caches): no resend; the next change is delivered.
//
// Resubscription: SotW RES-4 and RES-5 hold. Dropped names are forgotten
// (server/stream/v3/subscription.go:84-93) and a subscribed, existing name
// not yet returned triggers a response (simple.go:427-455, linear.go:178-204).
// Delta DELTA-3 does not hold: subscribing to a name already held at the
// current version adds it to the set (subscription.go:129-135) and the diff
// finds nothing to send (cache/v3/delta.go:64-71, linear.go:191-203) (T).
//
// initial_resource_versions: used on the first request of a type on a
// stream only, as the client's known versions (delta/v3/server.go:231-239,
// subscription.go:39-45); later ones are ignored. Versions are SHA-256
// hashes of the resource, stable across restarts. Matching names are
// skipped, differing ones sent, listed names that no longer exist come back
// in removed_resources (delta.go:72-73, linear.go:182-188) (T). The
// LinearCache also reports listed but unsubscribed names as removed
// (linear.go:206-211).
//
// Missing names in delta (DNE-5): not reported. removed_resources only ever
// lists names the server had returned (delta.go:72-73, linear.go:182-188),
// and a response with nothing in it is not sent (simple.go:605) (T).
//
// Legacy wildcard: on by default for every type, not only LDS/CDS
// (server/config/config.go:29-39, subscription.go:27-33); it ends at the
// first non-empty name list (subscription.go:60-71, 111-126). In delta, a
// request with an empty subscribe list is ignored entirely while in legacy
// mode, so unsubscribe=["*"] then has no effect (subscription.go:111-118).
// The first delta wildcard request is answered even when empty
// (simple.go:605, linear.go:486).
//
// Explicit "*": the stream subscription treats it as wildcard in both
// protocols (subscription.go:4, 74-97, 129-141). The SnapshotCache SotW path
// then builds responses from the literal request names (simple.go:516-523):
// R={"*"} yields an empty response and R={"*",A} only A (T), so WILD-1/3
// do not hold there. The LinearCache and both caches in delta honour it (T).
// The Snapshot flavour therefore claims explicit_wildcard for the delta
// variants only (variant_capabilities), and the "*" scenarios are skipped,
// not failed, in SotW: WILD-1 is a SHOULD, a feature a server may lack.
// Dropping "*" in delta: the SnapshotCache silently stops tracking
// wildcard-only names (delta.go:60-75); the LinearCache sends them in
// removed_resources (linear.go:206-211).
//
// Empty list after names (SotW RES-6/WILD-5): the subscription becomes
// empty and non-wildcard, but the SnapshotCache reads the empty name list
// as "everything" when building a response (simple.go:524-528): the next
// change to the type sends every resource of the type (T). The LinearCache
// conforms.
//
// Phantom unsubscribe (delta, UNSUB-4): harmless; an unknown name is just
// removed from empty sets (subscription.go:137-159). While wildcard,
// unsubscribing a name received only through the wildcard forgets its
// version, so it is sent again straight away (subscription.go:153-157,
// delta.go:47-50, linear.go:153-157): a needless resend, WILD-9 holds.
//
// TTL (Snapshot: claimed for SotW only): resources are stored as
// types.ResourceWithTTL (cache.NewResourcesWithTTL). A SotW response wraps
// each resource that has a TTL in a discovery Resource carrying it
// (cache.go:448-486), for every client: nothing in pkg/ reads
// node.client_features, so a client that advertises neither
// xds.config.supports-resource-ttl nor resource-in-sotw gets wrappers too
// (TTL-1, TTL-5) (T). The delta response drops the TTL: it builds each
// Resource from name, version and content only (cache.go:349-384) (T).
// Heartbeats need NewSnapshotCacheWithHeartbeating, which this target does
// not use: they go to SotW watches only, and a heartbeat lists only the
// resources that have a TTL (simple.go:187-220), which for full-state
// types (LDS, CDS) reads as the deletion of the others. The LinearCache
// has no TTL.
//
// Batches (Snapshot: claimed): ApplyChanges builds one snapshot from every
// change and installs it with one SetSnapshot, so each type changes
// version once and no client sees part of a batch. The LinearCache can
// update one type atomically (UpdateResources) but not several, so the
// Linear flavour leaves ApplyChanges unimplemented. Neither cache has
// aliases (Resource.aliases is never set).
//
// Other: the SnapshotCache answers an open SotW watch whenever its type's
// version in the new snapshot differs from the watch's version_info
// (simple.go:250-264). cache.NewSnapshot alone gives every type the one
// version it is given (cache/v3/snapshot.go:42-55), so a fixture bumping
// that version on every change would answer every open SotW watch of the
// node, of every type, with unchanged content (UPD-1, VER-2): a resend
// caused by the user of the cache, not the cache. The Snapshot flavour
// versions types independently, so a change to one type answers only that
// type's watches (T). A follow-up request that carries a node replaces the stream's node
// (xds.go:88-92): an empty Node{} moves the stream to node id "". Before a
// node's first snapshot, watches wait silently (simple.go:418-421, 579-589).
// A type URL with no LinearCache ends a Linear stream with an error
// (cache/v3/mux.go:124-131).
package gcpserver
