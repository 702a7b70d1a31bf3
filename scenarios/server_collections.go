package scenarios

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	xdscore "github.com/cncf/xds/go/xds/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/grpc/codes"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/internal/xdstp"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// LCOLL is the list collection of listeners (COLL-1).
var LCOLL = wire.ListenerCollection

// collectionVariants are the variants the list collection scenarios run
// in: delta ADS, where a stream carries any type URL (a collection type
// has no per-type service of its own).
var collectionVariants = []wire.Variant{wire.DeltaADS}

// inlineEntryName is the pattern of InlineEntry.name (XDSTP-11; the
// entry directive also allows '/', see the catalogue's ambiguities).
var inlineEntryName = regexp.MustCompile(`^[0-9a-zA-Z_\-\.~:]+$`)

// collectionOf is the list collection of listeners at path, with params.
func (s *S) collectionOf(path string, params ...string) xdstp.Name {
	n := s.XName(LDS, path, params...)
	n.Type = strings.TrimPrefix(LCOLL.URL, xdstp.TypePrefix)
	return n
}

// entries reads the list collection r carries as name: the leaf of every
// member, as its locator or its inline entry names it. A locator must
// name a listener one level below the collection's path (COLL-1).
func (s *S) entries(r *fakeclient.Response, name string, coll xdstp.Name) ([]string, []*xdscore.CollectionEntry_InlineEntry) {
	v := s.Checking("COLL-1")
	lc, ok := r.Get(name).(*listener.ListenerCollection)
	if !ok {
		v.Fatalf("%s response (nonce %q) carries %q as %T, not as a %s", LCOLL.Short, r.Nonce, name, r.Get(name), LCOLL.URL)
	}
	var leaves []string
	var inline []*xdscore.CollectionEntry_InlineEntry
	for i, e := range lc.GetEntries() {
		switch {
		case e.GetLocator() != nil:
			n, err := xdstp.FromLocator(e.GetLocator())
			if err != nil {
				v.Fatalf("entry #%d of %q is a bad locator: %v", i, name, err)
			}
			dir, leaf, _ := strings.Cut(n.ID, "/")
			if i := strings.LastIndexByte(n.ID, '/'); i >= 0 {
				dir, leaf = n.ID[:i], n.ID[i+1:]
			}
			if n.TypeURL() != LDS.URL || n.Authority != coll.Authority || dir != coll.ID {
				v.Errorf("entry #%d of %q locates %q, which is no listener of the collection's path", i, name, n.String())
			}
			leaves = append(leaves, leaf)
		case e.GetInlineEntry() != nil:
			inline = append(inline, e.GetInlineEntry())
			leaves = append(leaves, e.GetInlineEntry().GetName())
		default:
			v.Errorf("entry #%d of %q is neither a locator nor an inline entry", i, name)
		}
	}
	slices.Sort(leaves)
	return leaves, inline
}

// awaitCollection subscribes to the list collection coll and returns the
// response carrying it and the name it came under.
func (s *S) awaitCollection(coll xdstp.Name) (*fakeclient.Response, string) {
	s.Subscribe(LCOLL, coll.String())
	r, got := s.Checking("COLL-1").AwaitX(LCOLL, coll.String())
	s.Ack(LCOLL, r)
	return r, got
}

// awaitMembers reads delta responses of LDS until every one of members
// has come, checking the names delivered (checkDelivered) and, with
// check, each response; a glob among globs reported removed while it
// has members ends the wait, and so does a member delivered without the
// glob's context parameters (XDSTP-4).
func (s *S) awaitMembers(globs, members []string, check func(*fakeclient.Response)) *fakeclient.Response {
	missing := map[string]bool{}
	for _, m := range members {
		missing[m] = true
	}
	r := s.awaitWhere(LDS, fmt.Sprintf("LDS responses carrying the members %q", members), func(r *fakeclient.Response) bool {
		if check != nil {
			check(r)
		}
		if !s.checkDelivered(r) {
			s.FailNow()
		}
		for _, g := range globs {
			if r.HasRemoved(g) {
				s.Fatalf("LDS response (nonce %q) reports the glob %q removed, but it has members %q", r.Nonce, g, members)
			}
		}
		for _, n := range r.Names() {
			for m := range missing {
				switch {
				case xdstp.Same(n, m):
					delete(missing, m)
				case sameResource(n, xdstp.MustParse(m)):
					s.Checking("XDSTP-4").Fatalf("LDS response (nonce %q) delivers the member %q as %q: the glob's context parameters must be echoed", r.Nonce, m, n)
				}
			}
		}
		return len(missing) == 0
	})
	s.Ack(LDS, r)
	return r
}

// TP1 §Collections (list, glob), §Server redirects
var collectionScenarios = append(globUnsubscribeFamily(), []*engine.Scenario{
	{
		ID:           "server/collections/list",
		Title:        "A list collection lists the listeners under its path with its context parameters, and follows them",
		Requirements: []string{"COLL-1", "XDSTP-4"},
		Level:        results.Must,
		Variants:     collectionVariants,
		Needs:        with(xneeds(LDS), targets.NeedListCollections),
		Run: ServerScript(func(s *S) {
			for _, m := range []xdstp.Name{
				s.XName(LDS, "team-a/a", "env", "prod"),
				s.XName(LDS, "team-a/b", "env", "prod"),
				s.XName(LDS, "team-b/c", "env", "prod"), // another path
				s.XName(LDS, "team-a/d", "env", "dev"),  // other parameters
				s.XName(LDS, "flat", "env", "prod"),     // no path: in no collection
			} {
				s.SetX(LDS, m.String(), 1)
			}
			s.Set(LDS, "opaque", 1) // not an xdstp name: in no collection
			coll := s.collectionOf("team-a", "env", "prod")
			r, got := s.awaitCollection(coll)
			v := s.Checking("COLL-1")
			if leaves, _ := s.entries(r, got, coll); !slices.Equal(leaves, []string{"a", "b"}) {
				v.Fatalf("%q lists %q; the listeners under its path with its parameters are [a b]", got, leaves)
			}
			e := s.SetX(LDS, s.XName(LDS, "team-a/e", "env", "prod").String(), 1)
			lists := func(want ...string) {
				s.Ack(LCOLL, v.awaitWhere(LCOLL, fmt.Sprintf("%q listing %q", got, want), func(r *fakeclient.Response) bool {
					if !r.Has(got) {
						return false
					}
					leaves, _ := s.entries(r, got, coll)
					return slices.Equal(leaves, want)
				}))
			}
			lists("a", "b", "e")
			// It follows deletions, down to the last member: the client is
			// then told, by a collection listing nothing or by its removal
			// (a path without members may have no collection: DEL-1).
			s.Delete(LDS, s.XName(LDS, "team-a/a", "env", "prod").String())
			lists("b", "e")
			s.Delete(LDS, s.XName(LDS, "team-a/b", "env", "prod").String())
			s.Delete(LDS, e)
			v.awaitWhere(LCOLL, fmt.Sprintf("%q listing nothing, or removed", got), func(r *fakeclient.Response) bool {
				if r.HasRemoved(got) {
					return true
				}
				leaves, _ := s.entries(r, got, coll)
				return r.Has(got) && len(leaves) == 0
			})
		}),
	},
	{
		ID:           "server/collections/list-inline-entries",
		Title:        "Inline entries of a list collection have a version, a listener, and unique names of the allowed characters",
		Requirements: []string{"COLL-3", "XDSTP-11"},
		Level:        results.May,
		Variants:     collectionVariants,
		Needs:        with(xneeds(LDS), targets.NeedListCollections),
		Run: ServerScript(func(s *S) {
			for _, leaf := range []string{"a", "b", "c"} {
				s.SetX(LDS, s.XName(LDS, "inline/"+leaf).String(), 1)
			}
			coll := s.collectionOf("inline")
			r, got := s.awaitCollection(coll)
			_, inline := s.entries(r, got, coll)
			if len(inline) == 0 {
				s.Checking("COLL-3").Fatalf("%q (response %q) has no inline entries: the server sends locators only", got, r.Nonce)
			}
			names := map[string]bool{}
			for i, e := range inline {
				if n := e.GetName(); n != "" {
					if !inlineEntryName.MatchString(n) || names[n] {
						s.Checking("XDSTP-11").Errorf("inline entry #%d of %q is named %q: want a unique name matching %s", i, got, n, inlineEntryName)
					}
					names[n] = true
				}
				if e.GetVersion() == "" {
					s.Checking("COLL-3").Errorf("inline entry #%d (%q) of %q has no version", i, e.GetName(), got)
				}
				if e.GetResource().GetTypeUrl() != LDS.URL {
					s.Checking("COLL-3").Errorf("inline entry #%d (%q) of %q holds a %q, not a listener", i, e.GetName(), got, e.GetResource().GetTypeUrl())
				} else if _, err := e.GetResource().UnmarshalNew(); err != nil {
					s.Checking("COLL-3").Errorf("inline entry #%d (%q) of %q does not decode: %v", i, e.GetName(), got, err)
				}
			}
		}),
	},
	{
		ID:           "server/collections/glob-members",
		Title:        "A glob delivers each member under its path with its context parameters, pushes new ones and reports deleted ones removed",
		Requirements: []string{"COLL-4", "XDSTP-4", "XDSTP-5"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        with(xneeds(LDS), targets.NeedGlobCollections),
		Run: ServerScript(func(s *S) {
			a, b := s.XName(LDS, "pool/a", "env", "prod").String(), s.XName(LDS, "pool/b", "env", "prod").String()
			out := s.XName(LDS, "elsewhere/x", "env", "prod").String() // another path
			dev := s.XName(LDS, "pool/z", "env", "dev").String()       // other parameters
			for _, n := range []string{a, b, out, dev} {
				s.SetX(LDS, n, 1)
			}
			opaque := s.Set(LDS, "opaque", 1) // not an xdstp name
			glob := s.XName(LDS, "pool/*", "env", "prod").String()
			s.forbidOn(s.C, fakeclient.Watch{Rule: "COLL-4", Why: opaque + " is no xdstp name, so no glob's member", Types: []wire.Type{LDS},
				Match: func(r *fakeclient.Response) bool { return r.Has(opaque) }})
			s.forbidOn(s.C, fakeclient.Watch{Rule: "COLL-4", Why: out + " is not under the glob's path", Types: []wire.Type{LDS},
				Match: func(r *fakeclient.Response) bool { return r.Has(out) }})
			s.forbidOn(s.C, fakeclient.Watch{Rule: "XDSTP-5", Why: dev + " has other context parameters than the glob", Types: []wire.Type{LDS},
				Match: func(r *fakeclient.Response) bool { return r.Has(dev) }})
			s.Subscribe(LDS, glob)
			v := s.Checking("COLL-4")
			v.awaitMembers([]string{glob}, []string{a, b}, nil)
			s.Delete(LDS, b)
			s.Ack(LDS, v.AwaitRemoved(LDS, b)) // a server may hold the next push until then
			c := s.SetX(LDS, s.XName(LDS, "pool/c", "env", "prod").String(), 1)
			v.awaitMembers(nil, []string{c}, nil)
		}),
	},
	{
		ID:           "server/collections/empty-glob-removed",
		Title:        "A glob with no members is reported in removed_resources",
		Requirements: []string{"COLL-5"},
		Level:        results.Should,
		Variants:     delta,
		Needs:        with(xneeds(LDS), targets.NeedGlobCollections),
		Run: ServerScript(func(s *S) {
			s.SetX(LDS, s.XName(LDS, "elsewhere/x").String(), 1)
			glob := s.XName(LDS, "empty/*").String()
			s.Subscribe(LDS, glob)
			s.Checking("COLL-5").AwaitRemoved(LDS, glob)
		}),
	},
	{
		ID:           "server/collections/several-globs-any-depth",
		Title:        "One request may subscribe several globs, at any path depth",
		Requirements: []string{"COLL-7", "COLL-4"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        with(xneeds(LDS), targets.NeedGlobCollections),
		Run: ServerScript(func(s *S) {
			a := s.SetX(LDS, s.XName(LDS, "x/a").String(), 1)
			b := s.SetX(LDS, s.XName(LDS, "some/longer/path/b").String(), 1)
			globs := []string{s.XName(LDS, "x/*").String(), s.XName(LDS, "some/longer/path/*").String()}
			s.Subscribe(LDS, globs...)
			s.Checking("COLL-7").awaitMembers(globs, []string{a, b}, nil)
		}),
	},
	{
		ID:           "server/collections/no-glob-over-sotw",
		Title:        "SotW: a name ending in /* is no glob collection",
		Requirements: []string{"COLL-6"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        with(xneeds(LDS), targets.NeedGlobCollections),
		Run: ServerScript(func(s *S) {
			member := s.SetX(LDS, s.XName(LDS, "pool/a").String(), 1)
			bar := s.Set(LDS, "barrier", 1)
			glob := s.XName(LDS, "pool/*").String()
			s.Subscribe(LDS, glob, bar)
			v := s.Checking("COLL-6")
			why := "globs are collections on delta streams only; over SotW " + glob + " names no resource"
			// The barrier is delivered in the answer to the first request
			// (RES-2), a precondition: only what comes with it is checked.
			r := s.awaitWhere(LDS, fmt.Sprintf("an LDS response carrying %q", bar), func(r *fakeclient.Response) bool {
				if r.Has(member) {
					v.Fatalf("%s: LDS response (nonce %q) carries the member %q", why, r.Nonce, member)
				}
				return r.Has(bar)
			})
			s.Ack(LDS, r)
			s.forbidOn(s.C, fakeclient.Watch{Rule: "COLL-6", Why: why, Types: []wire.Type{LDS},
				Match: func(r *fakeclient.Response) bool { return r.Has(member) }})
		}),
	},
	{
		ID:    "server/collections/glob-direct-members-only",
		Title: "A glob's members are the resources one path level below it, never deeper, at subscription and when created later",
		// xds-transport-next-steps §Alternatives considered, Glob
		// collections: "Member resources must match the path structure of
		// the parent collection", with filesystem glob semantics, where
		// '*' stays within one path segment; Envoy maps a member to its
		// glob by its last segment alike (COLL-4's note).
		Requirements: []string{"COLL-4"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        with(xneeds(LDS), targets.NeedGlobCollections),
		Run: ServerScript(func(s *S) {
			member := s.SetX(LDS, s.XName(LDS, "tree/a").String(), 1)
			nested := s.SetX(LDS, s.XName(LDS, "tree/sub/b").String(), 1)
			glob := s.XName(LDS, "tree/*").String()
			v := s.Checking("COLL-4")
			deeper := func(names ...string) func(*fakeclient.Response) bool {
				return func(r *fakeclient.Response) bool { return slices.ContainsFunc(names, r.Has) }
			}
			later := s.XName(LDS, "tree/sub/c").String()
			s.forbidOn(s.C, fakeclient.Watch{Rule: "COLL-4", Why: "a glob's members are one path level below it; " + nested + " and " + later + " are two", Types: []wire.Type{LDS},
				Match: deeper(nested, later)})
			s.Subscribe(LDS, glob)
			v.awaitMembers([]string{glob}, []string{member}, nil)
			// Created while subscribed: the deeper one is no member either.
			s.SetX(LDS, later, 1)
			next := s.SetX(LDS, s.XName(LDS, "tree/d").String(), 1)
			v.awaitMembers(nil, []string{next}, nil)
		}),
	},
	{
		ID:    "server/collections/glob-resubscribed",
		Title: "Subscribing again to a glob already subscribed brings its current members again, and an empty one's removal again",
		// DELTA-3: every name subscribed is answered, even if the server
		// believes the client holds it; for a glob, its members (COLL-4),
		// or, for an empty one, its URL in removed_resources (COLL-5).
		Requirements: []string{"DELTA-3", "COLL-4", "COLL-5"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        with(xneeds(LDS), targets.NeedGlobCollections),
		Run: ServerScript(func(s *S) {
			a := s.SetX(LDS, s.XName(LDS, "again/a").String(), 1)
			b := s.SetX(LDS, s.XName(LDS, "again/b").String(), 1)
			for _, row := range []struct {
				glob    string
				members []string
				first   string // the rule the first answer rests on
			}{
				{s.XName(LDS, "again/*").String(), []string{a, b}, "COLL-4"},
				{s.XName(LDS, "nothing/*").String(), nil, "COLL-5"}, // empty: its removal
			} {
				// The first subscription is a precondition; the same again,
				// on the same stream, is the check.
				for _, v := range []*S{s.precondition(row.first), s.Checking("DELTA-3")} {
					s.Subscribe(LDS, row.glob)
					if len(row.members) > 0 {
						v.awaitMembers([]string{row.glob}, row.members, nil)
						continue
					}
					s.Ack(LDS, v.AwaitRemoved(LDS, row.glob))
				}
			}
		}),
	},
	{
		ID:           "server/redirect/glob-not-redirected",
		Title:        "A glob collection as a whole is never redirected",
		Requirements: []string{"REDIR-2"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        with(xneeds(LDS), targets.NeedGlobCollections),
		Run: ServerScript(func(s *S) {
			a := s.SetX(LDS, s.XName(LDS, "moving/a").String(), 1)
			b := s.SetX(LDS, s.XName(LDS, "moving/b").String(), 1)
			glob := s.XName(LDS, "moving/*").String()
			s.Subscribe(LDS, glob)
			v := s.Checking("REDIR-2")
			v.awaitMembers([]string{glob}, []string{a, b}, func(r *fakeclient.Response) {
				for _, res := range r.Resources {
					if _, redirect := res.Message.(*xdscore.ResourceLocator); redirect && (res.Name == glob || xdstp.Same(res.Name, glob)) {
						v.Fatalf("LDS response (nonce %q) redirects the glob %q as a whole", r.Nonce, glob)
					}
				}
			})
		}),
	},
}...)

// globUnsubscribeEvent is one row of the table of what may happen after a
// client unsubscribed from a glob collection: the unsubscribeEvents of
// server_core.go for a glob, whose members the client holds through it
// alone, and for a glob whose collection as a whole is in error (ERR-11).
// None of it may reach the client (UNSUB-2). A server that keeps a glob's
// subscription apart from its names may forget to end it, or end it but
// go on tracking its members as held.
type globUnsubscribeEvent struct {
	id, words string
	errored   bool // the glob itself is in error (needs resource errors)
	// happen makes the event happen to the member a, the member c not
	// yet created, or the glob itself.
	happen func(s *S, glob, a, c string)
}

var globUnsubscribeEvents = []globUnsubscribeEvent{
	{"update", "an update of a member", false, func(s *S, _, a, _ string) { s.SetX(LDS, a, 2) }},
	{"deletion", "the deletion of a member", false, func(s *S, _, a, _ string) { s.Delete(LDS, a) }},
	{"creation", "a new member", false, func(s *S, _, _, c string) { s.SetX(LDS, c, 1) }},
	{"error-cleared", "the end of the collection's error", true, func(s *S, glob, _, _ string) { s.Delete(LDS, glob) }},
}

// globUnsubscribeFamily is the table of globUnsubscribeEvents: subscribe
// a listener by name and a glob (served, or reported in error), unsubscribe
// the glob, then the event; neither the glob nor a member may come again.
// The listener subscribed by name, updated after the event, bounds the
// wait: a server pushes changes in the order they happen.
func globUnsubscribeFamily() []*engine.Scenario {
	var out []*engine.Scenario
	for _, e := range globUnsubscribeEvents {
		needs := with(xneeds(LDS), targets.NeedGlobCollections)
		if e.errored {
			needs = with(needs, targets.NeedResourceErrors)
		}
		out = append(out, &engine.Scenario{
			ID:           "server/collections/glob-unsubscribed-" + e.id,
			Title:        fmt.Sprintf("After a glob collection is unsubscribed, %s is not sent to the client", e.words),
			Requirements: []string{"UNSUB-2"},
			Level:        results.Should,
			Variants:     delta,
			Needs:        needs,
			Run: ServerScript(func(s *S) {
				a := s.SetX(LDS, s.XName(LDS, "gone/a").String(), 1)
				b := s.SetX(LDS, s.XName(LDS, "gone/b").String(), 1)
				c := s.XName(LDS, "gone/c").String() // created by the event only
				glob := s.XName(LDS, "gone/*").String()
				kept, bar := s.Set(LDS, "kept", 1), s.Set(LDS, "barrier", 1)
				s.Subscribe(LDS, kept)
				s.Ack(LDS, s.AwaitResource(LDS, kept))
				if e.errored {
					s.setErrorOn(LDS, glob, codes.PermissionDenied)
					s.Subscribe(LDS, glob)
					s.Ack(LDS, s.precondition("ERR-11").AwaitError(LDS, glob))
				} else {
					s.Subscribe(LDS, glob)
					s.precondition("COLL-4").awaitMembers([]string{glob}, []string{a, b}, nil)
				}
				s.Unsubscribe(LDS, glob)
				s.Barrier(LDS, bar) // the unsubscription is taken in
				s.Checking("UNSUB-2").NeverCarrying(fmt.Sprintf("%s was unsubscribed before %s", glob, e.words), LDS, glob, a, b, c)
				e.happen(s, glob, a, c)
				s.pushed(LDS, "kept", kept, 2)
			}),
		})
	}
	return out
}
