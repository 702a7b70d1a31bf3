package scenarios

import (
	"strings"

	"google.golang.org/genproto/googleapis/rpc/status"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
)

// xds_protocol#ack-nack-and-resource-type-instance-version, #when-to-send-an-update
var ackScenarios = []*engine.Scenario{
	{
		ID:           "server/ack/no-resend-after-ack",
		Title:        "An ACK does not make the server resend what it just sent",
		Requirements: []string{"UPD-1"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        fx(EDS),
		Run: srv(func(s *S) {
			a := s.Set(EDS, "a", 1)
			s.Subscribe(EDS, a)
			s.ExpectAcked(EDS)
			s.ExpectNone("nothing changed after the ACK", EDS)
		}),
	},
	{
		ID:           "server/ack/repeated-request-no-resend",
		Title:        "Repeating an identical ACK does not make the server resend",
		Requirements: []string{"UPD-1"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        fx(EDS),
		Run: srv(func(s *S) {
			a := s.Set(EDS, "a", 1)
			s.Subscribe(EDS, a)
			r := s.ExpectAcked(EDS)
			s.Ack(EDS, r)
			s.Ack(EDS, r)
			s.ExpectNone("the repeated ACKs ask for nothing new", EDS)
		}),
	},
	{
		ID:           "server/nack/no-resend-loop",
		Title:        "A NACK (error_detail set) does not make the server resend the rejected version",
		Requirements: []string{"ACK-5", "UPD-1"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        fx(EDS),
		Run: srv(func(s *S) {
			a := s.Set(EDS, "a", 1)
			s.Subscribe(EDS, a)
			s.Nack(EDS, s.Expect(EDS))
			s.ExpectNoneCarrying("resending the rejected version makes a NACK loop", EDS, a)
		}),
	},
	{
		ID:           "server/nack/new-version-after-nack",
		Title:        "After a NACK the stream stays open and a later version is delivered on it",
		Requirements: []string{"ACK-9"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        fx(EDS),
		Run: srv(func(s *S) {
			a, bar := s.Set(EDS, "a", 1), s.Set(EDS, "barrier", 1)
			s.Subscribe(EDS, a)
			s.Nack(EDS, s.Expect(EDS))
			s.Barrier(EDS, bar) // the NACK has been processed
			s.Set(EDS, "a", 2)
			// The stream stays open: the new revision arrives on it.
			s.AwaitRevision(EDS, a, 2)
		}),
	},
	{
		ID:           "server/nack/any-error-code",
		Title:        "A NACK with an unusual code and a long unicode message is still just a NACK",
		Requirements: []string{"ACK-4", "ACK-9"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        fx(EDS),
		Run: srv(func(s *S) {
			a, bar := s.Set(EDS, "a", 1), s.Set(EDS, "barrier", 1)
			s.Subscribe(EDS, a)
			r := s.Expect(EDS)
			s.must(s.C.NackWith(EDS, r, &status.Status{Code: 13, Message: strings.Repeat("résumé ✓ 検証 ", 400)}))
			s.Barrier(EDS, bar) // the NACK has been processed
			s.Set(EDS, "a", 2)
			// The stream stays open: the new revision arrives on it.
			s.AwaitRevision(EDS, a, 2)
		}),
	},
}
