package scenarios

import (
	"slices"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/status"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// xds_protocol#ack-nack-and-resource-type-instance-version, #when-to-send-an-update
var ackScenarios = append([]*engine.Scenario{
	{
		ID:           "server/ack/no-resend-after-ack",
		Title:        "An ACK does not make the server resend what it just sent",
		Requirements: []string{"UPD-1"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a := s.Set(EDS, "a", 1)
			s.Subscribe(EDS, a)
			s.ExpectAcked(EDS)
			s.Never("nothing changed after the ACK", EDS)
		}),
	},
	{
		ID:    "server/ack/identical-set-no-resend",
		Title: "Content set again identical, however encoded, is not resent",
		// UPD-1: nothing changed, so nothing is sent. A server that
		// versions the bytes it was given, not the message, resends
		// content set again in another field order, and one that hashes
		// a marshal that is not deterministic resends content holding a
		// map. A change of EDS after the re-sets is the barrier: its push
		// is made after them.
		Requirements: []string{"UPD-1"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        Fixture(CDS, EDS),
		Run: ServerScript(func(s *S) {
			content := wire.MustAny(wire.WithFilterMetadata(wire.ClientCluster(s.Name("c"), 1),
				"a", "b", "c", "d", "e", "f", "g", "h"))
			c := s.SetContent(CDS, "c", 1, content)
			s.Subscribe(CDS, c)
			s.Ack(CDS, s.AwaitResource(CDS, c))
			e := s.Set(EDS, "e", 1)
			s.Subscribe(EDS, e)
			s.Ack(EDS, s.AwaitRevision(EDS, e, 1))
			s.SetContent(CDS, "c", 1, wire.Reencoded(content))
			s.Set(EDS, "e", 2)
			s.Ack(EDS, s.AwaitRevision(EDS, e, 2))
			s.Never("the cluster was set again with identical content, only encoded otherwise", CDS)
		}),
	},
	{
		ID:           "server/ack/repeated-request-no-resend",
		Title:        "Repeating an identical ACK does not make the server resend",
		Requirements: []string{"UPD-1"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a := s.Set(EDS, "a", 1)
			s.Subscribe(EDS, a)
			r := s.ExpectAcked(EDS)
			s.Ack(EDS, r)
			s.Ack(EDS, r)
			s.Never("the repeated ACKs ask for nothing new", EDS)
		}),
	},
	{
		ID:           "server/nack/no-resend-loop",
		Title:        "A NACK (error_detail set) does not make the server resend the rejected version, now or later",
		Requirements: []string{"ACK-5", "UPD-1"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a := s.Set(EDS, "a", 1)
			s.Subscribe(EDS, a)
			s.Nack(EDS, s.Expect(EDS))
			s.NeverCarrying("resending the rejected version makes a NACK loop", EDS, a)
		}),
	},
	{
		ID:    "server/nack/resubscribed-after-nack",
		Title: "A name dropped and asked for again is sent again, whatever a NACK rejected before: accepted since, changed since, or never in the rejected response",
		// RES-5: a name requested anew is newly requested. What a NACK
		// rejected may be kept from a response (ACK-5), but only as long
		// as it is that very content, of that name, still rejected.
		Requirements: []string{"RES-5"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			v := s.Checking("RES-5")
			s.AddedNamesServed(EDS) // after no NACK
			// An anchor stays subscribed throughout: a subscription left
			// empty may reset all a server remembers of the type, around
			// the memory checked here. A push of the anchor is a barrier:
			// after it, no change made before is still pending, to be
			// pushed after a later request as if it answered it.
			anchor := s.Set(EDS, "anchor", 1)
			s.Subscribe(EDS, anchor)
			s.Ack(EDS, s.AwaitRevision(EDS, anchor, 1))
			rev := 1
			barrier := func() {
				rev++
				s.Set(EDS, "anchor", rev)
				s.Ack(EDS, s.AwaitRevision(EDS, anchor, rev))
			}
			// Accepted since: rejected at revision 1, accepted at 2, then
			// at 1 again; revision 1 is no longer rejected.
			a := s.Set(EDS, "accepted-since", 1)
			s.Subscribe(EDS, a)
			s.Nack(EDS, s.AwaitRevision(EDS, a, 1))
			// The NACK is taken in before the change that follows: a
			// change overtaking it would make it stale (NONCE-7).
			s.Barrier(EDS, s.Set(EDS, "barrier-1", 1))
			s.Set(EDS, "accepted-since", 2)
			s.Ack(EDS, s.AwaitRevision(EDS, a, 2))
			s.Set(EDS, "accepted-since", 1)
			s.Ack(EDS, s.AwaitRevision(EDS, a, 1))
			s.Unsubscribe(EDS, a)
			s.Subscribe(EDS, a)
			s.Ack(EDS, v.AwaitRevision(EDS, a, 1))
			// Changed since: rejected at revision 1, dropped, changed.
			b := s.Set(EDS, "changed-since", 1)
			s.Subscribe(EDS, b)
			s.Nack(EDS, s.AwaitRevision(EDS, b, 1))
			s.Unsubscribe(EDS, b)
			s.Barrier(EDS, s.Set(EDS, "barrier-2", 1))
			s.Set(EDS, "changed-since", 2)
			barrier()
			s.Subscribe(EDS, b)
			s.Ack(EDS, v.AwaitRevision(EDS, b, 2))
			// Never rejected: accepted, then another name's push alone
			// is NACKed; the first is dropped and asked for again.
			c := s.Set(EDS, "kept", 1)
			s.Subscribe(EDS, c)
			s.Ack(EDS, s.AwaitRevision(EDS, c, 1))
			s.Set(EDS, "changed-since", 3)
			if r := s.AwaitRevision(EDS, b, 3); !r.Has(c) {
				s.Nack(EDS, r)
				s.Unsubscribe(EDS, c)
				s.Subscribe(EDS, c)
				v.AwaitRevision(EDS, c, 1)
			}
		}),
	},
	{
		ID:           "server/nack/new-version-after-nack",
		Title:        "After a NACK the stream stays open and a later version is pushed on it, without a further request",
		Requirements: []string{"ACK-9"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        Fixture(EDS),
		Run:          nackThenNewVersion(func(s *S, r *fakeclient.Response) { s.Nack(EDS, r) }),
	},
	{
		ID:           "server/nack/any-error-code",
		Title:        "A NACK with an unusual code and a long unicode message is still just a NACK",
		Requirements: []string{"ACK-4"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        Fixture(EDS),
		Run: nackThenNewVersion(func(s *S, r *fakeclient.Response) {
			s.Checking("ACK-4").NackWith(EDS, r, &status.Status{Code: 13, Message: strings.Repeat("résumé ✓ 検証 ", 400)})
		}),
	},
}, slices.Concat(wildcardAckQuiet(), nackScenariosCore, combinedFamily())...)

// wildcardAckQuiet generates, for each wildcard mode, server/ack/no-resend-
// after-ack under a wildcard: the ACK of the wildcard's answer is
// answered with nothing, neither the resources again nor an empty
// response (which the client would ACK in turn, a loop). Delta only: on a
// server shared with other pairs, their changes push to a SotW wildcard
// stream full states that rightly carry this pair's resources again; a
// delta push carries what changed alone.
func wildcardAckQuiet() []*engine.Scenario {
	var out []*engine.Scenario
	for _, m := range wildcardModes {
		out = append(out, &engine.Scenario{
			ID:           "server/ack/" + m.name + "-no-resend-after-ack",
			Title:        m.words + ": the ACK of the wildcard's answer is not answered, neither with the resources again nor with an empty response",
			Requirements: []string{"UPD-1", m.rule},
			Level:        results.Should,
			Variants:     delta,
			Needs:        with(Fixture(), m.need),
			Run: ServerScript(func(s *S) {
				for _, t := range s.TypesOf(wildcardTypes...) {
					a := s.Set(t, "a", 1)
					m.subscribe(s, t)
					s.wildcardSet(t, a) // ACKed
					held := s.C.Known(t)[a]
					// A server that builds resources from its own model
					// (builds_content) may change a when a later type's
					// resource is set (Envoy Gateway's listener when a route
					// comes): a new version of a is then a change, not a
					// resend. Any other server's a changes only when the
					// scenario sets it, which it does not.
					changes := s.target.Caps.GetBuildsContent()
					s.forbidOn(s.C, fakeclient.Watch{Rule: "UPD-1", Why: "nothing changed after the ACK", Types: []wire.Type{t},
						Match: func(r *fakeclient.Response) bool {
							resent := r.Has(a) && !(changes && r.ResourceVersion(a) != held)
							return resent || r.HasRemoved(a) || carriesNothing(r)
						}})
				}
			}),
		})
	}
	return out
}

// nackThenNewVersion is the body of the scenarios about what follows a
// NACK: the client NACKs its first endpoints with nack, and the next
// revision must be pushed on the same stream without a further request,
// under the rule of the scenario (its headline).
func nackThenNewVersion(nack func(s *S, r *fakeclient.Response)) func(*engine.T) {
	return ServerScript(func(s *S) {
		a := s.Set(EDS, "a", 1)
		s.Subscribe(EDS, a)
		nack(s, s.Expect(EDS))
		// No request follows the NACK: one would wake a server that
		// stalls the type after a NACK until the client speaks again.
		s.Settle(EDS)
		s.Set(EDS, "a", 2)
		s.Checking(s.Headline()).AwaitRevision(EDS, a, 2)
	})
}

// carriesNothing says a delta response carries no resource, no removal and
// no error: it tells the client nothing.
func carriesNothing(r *fakeclient.Response) bool {
	return len(r.Resources) == 0 && len(r.Removed) == 0 && len(r.RemovedNames) == 0 && len(r.Errors) == 0
}
