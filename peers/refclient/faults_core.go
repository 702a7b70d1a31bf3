package refclient

import "slices"

// The faults below each break one step of the client scenarios of issue
// 24's core dimensions: what a client does with a resource it dropped, the
// requests around a NACK, what it asks for after a response that covered
// part of what it asked, and what it asks for again on a new stream while
// names are still pending. Each is a mistake an implementer could
// plausibly make. They join AllFaults and the descriptions in init, so the
// older list stays as it is.
const (
	// FaultApplyDropped keeps a resource the client dropped in its cache,
	// so a push of it is used again and shown in use (RES-3, DELTA-5).
	FaultApplyDropped Fault = "apply-dropped"
	// FaultRemovalRewatchesDropped takes a delta removal of a resource the
	// client dropped as news of a resource it waits for: it watches, and
	// subscribes to, the name again (DEL-3).
	FaultRemovalRewatchesDropped Fault = "removal-rewatches-dropped"
	// FaultRecreationRewatchesDropped remembers the resources it once asked
	// for that were deleted, dropped or not, to take them back when they
	// are created again (DNE-4 kept past the drop): a dropped resource
	// deleted and sent again is watched, and asked for, again (RES-3,
	// DELTA-5).
	FaultRecreationRewatchesDropped Fault = "recreation-rewatches-dropped"
	// FaultNackRestatesRepliedNames builds a SotW NACK with the names of
	// the type's last ACK or NACK, not the subscription as it is now: names
	// added since are left out (RES-1).
	FaultNackRestatesRepliedNames Fault = "nack-restates-replied-names"
	// FaultVersionAfterNackIsRejected NACKs with the version last accepted
	// (ACK-3), but the SotW requests of the type after the NACK carry the
	// version it rejected, until one is accepted (SEQ-1).
	FaultVersionAfterNackIsRejected Fault = "version-after-nack-is-rejected"
	// FaultNextRequestNamesAnsweredOnly answers a response with a request
	// that names only what the response carried: a SotW ACK lists those
	// names alone, a delta ACK unsubscribes the names the response left
	// out (RES-1, DELTA-2).
	FaultNextRequestNamesAnsweredOnly Fault = "next-request-names-answered-only"
	// FaultReconnectForgetsPending asks, on a new stream, only for the
	// resources it holds, not for those it asked for and never received,
	// while taking the server to know them all (RECONN-3, DELTA-7).
	FaultReconnectForgetsPending Fault = "reconnect-forgets-pending"
	// FaultIrvListsPending lists in initial_resource_versions every name
	// asked for, those never received with an empty version, as if it
	// held them all (DELTA-6).
	FaultIrvListsPending Fault = "irv-lists-pending"
)

// coreFaults are the faults of this file, in the order they join AllFaults.
var coreFaults = []Fault{
	FaultApplyDropped,
	FaultRemovalRewatchesDropped,
	FaultRecreationRewatchesDropped,
	FaultNackRestatesRepliedNames,
	FaultVersionAfterNackIsRejected,
	FaultNextRequestNamesAnsweredOnly,
	FaultReconnectForgetsPending,
	FaultIrvListsPending,
}

var coreFaultDescriptions = map[Fault]string{
	FaultApplyDropped:                 "RES-3, DELTA-5: a pushed resource the client dropped is used again",
	FaultRemovalRewatchesDropped:      "DEL-3: a delta removal of a resource the client dropped makes it subscribe to the name again",
	FaultRecreationRewatchesDropped:   "RES-3, DELTA-5: a dropped resource deleted and sent again is watched and asked for again",
	FaultNackRestatesRepliedNames:     "RES-1: a SotW NACK names what the type's last ACK or NACK named, not the subscription as it is now",
	FaultVersionAfterNackIsRejected:   "SEQ-1: SotW requests after a NACK carry the rejected version until one is accepted",
	FaultNextRequestNamesAnsweredOnly: "RES-1, DELTA-2: an ACK names only what the response carried (delta: unsubscribes what it left out)",
	FaultReconnectForgetsPending:      "RECONN-3, DELTA-7: a new stream asks again only for the resources held, not for those still pending",
	FaultIrvListsPending:              "DELTA-6: initial_resource_versions lists the names asked for and never received, with an empty version",
}

func init() {
	AllFaults = append(AllFaults, coreFaults...)
	for f, d := range coreFaultDescriptions {
		faultDescriptions[f] = d
	}
}

// dropped reports whether the client asked for name of type u once and
// watches it no longer.
func (c *Client) dropped(u, name string) bool {
	return c.everRequested[u][name] && !c.watched[u][name]
}

// rewatch is the memory of the rewatching faults: names of u watched
// again although nothing refers to them (reconcile adds them).
func (c *Client) rewatchName(u, name string) {
	if c.rewatch == nil {
		c.rewatch = map[string]map[string]bool{}
	}
	if c.rewatch[u] == nil {
		c.rewatch[u] = map[string]bool{}
	}
	c.rewatch[u][name] = true
}

// deletedDropped notes, for FaultRecreationRewatchesDropped, that name of
// u, which the client asked for once, was deleted; recreatedDropped
// watches it again when it comes back.
func (c *Client) deletedDropped(u, name string) {
	if !c.fault(FaultRecreationRewatchesDropped) || !c.everRequested[u][name] {
		return
	}
	if c.goneOnce == nil {
		c.goneOnce = map[string]map[string]bool{}
	}
	if c.goneOnce[u] == nil {
		c.goneOnce[u] = map[string]bool{}
	}
	c.goneOnce[u][name] = true
}

// recreatedDropped is FaultRecreationRewatchesDropped taking back name of
// u, a dropped resource sent again after its deletion.
func (c *Client) recreatedDropped(u, name string) {
	if c.goneOnce[u][name] && c.dropped(u, name) {
		c.rewatchName(u, name) // RES-3, DELTA-5 broken: it is not ignored
	}
}

// answeredOnly is FaultNextRequestNamesAnsweredOnly's SotW ACK names: of
// names, only those the response carried.
func answeredOnly(names []string, items []item) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool {
		return !slices.ContainsFunc(items, func(it item) bool { return it.name == n })
	})
}
