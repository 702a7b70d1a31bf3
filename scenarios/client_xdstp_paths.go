package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/internal/xdstp"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// Context-parameter order on every path of the client role that carries
// an xdstp name (XDSTP-3): the client is pointed, through its route, at
// a cluster whose xdstp name has two context parameters; the harness
// delivers it, removes it and sends it invalid under the name exactly as
// the client asked for it, and under the same name with its parameters in
// the other order. The client's answers (its ACKs and NACKs and the names
// they carry) and its status view must treat both alike.
// client/xdstp/context-parameter-order checks the first delivery; these
// check the paths after it.

// clientOrderPath is one path of the client-role parameter-order table:
// the rules it checks when the name is written as the client asked (the
// first is the scenario's headline), and the step. run gets the view of
// each step (on: the rule's own view, or XDSTP-3's for the name written
// otherwise), the name the client asked for, and the name as the harness
// writes it on the path.
type clientOrderPath struct {
	path, what string
	rules      []string
	run        func(f *F, a *C, on func(rule string) *C, asked, written string)
}

// clientOrderPaths are the paths of clientOrderScenarios.
var clientOrderPaths = []clientOrderPath{
	{"ack", "a delivery, its ACK and the status view", []string{"ACK-2", "RES-1", "OBS-1"}, func(f *F, a *C, on func(string) *C, asked, written string) {
		eds := xname(authA, EDS, f.Name("endpoints"))
		r := on("ACK-2").ExpectAck(CDS, a.Respond(CDS, "1", edsCluster(written, eds)), "1")
		f.namesOnce(r, asked)
		// Used: the client follows the cluster to its endpoints (the
		// chain, a precondition, unless the name was written otherwise).
		on("").AwaitSubscribed(EDS, eds)
		f.shownOnce(on("OBS-1"), asked, "ACKED", func(r observer.Resource) bool { return r.State == observer.Acked })
	}},
	{"removal", "a removal (delta removed_resources, SotW full state)", []string{"DEL-2", "DEL-4"}, func(f *F, a *C, on func(string) *C, asked, written string) {
		eds := xname(authA, EDS, f.Name("endpoints"))
		// Held first, delivered as asked.
		a.precondition(chainAckRule).ExpectAck(CDS, a.Respond(CDS, "1", edsCluster(asked, eds)), "1")
		a.precondition("RES-1").AwaitSubscribed(EDS, eds)
		gone := on("DEL-2")
		if f.Variant.IsDelta() {
			a.precondition(chainAckRule).ExpectAck(CDS, a.Remove(CDS, "2", written), "")
		} else {
			gone = on("DEL-4")
			// A full state that carries it written otherwise still has it.
			gone.ExpectAck(CDS, a.Respond(CDS, "2", edsCluster(written, eds)), "2")
			f.shownOnce(gone, asked, "ACKED, still held: the full state carries it, as "+written, func(r observer.Resource) bool {
				return r.State == observer.Acked
			})
			a.precondition(chainAckRule).ExpectAck(CDS, a.Respond(CDS, "3"), "3")
		}
		f.shownOnce(gone, asked, "deleted (DOES_NOT_EXIST or no longer listed)", func(r observer.Resource) bool { return r.State == observer.DoesNotExist })
	}},
	{"nack", "an invalid delivery, its NACK and the status view", []string{"ACK-7", "RES-1", "OBS-1"}, func(f *F, a *C, on func(string) *C, asked, written string) {
		eds := xname(authA, EDS, f.Name("endpoints"))
		a.precondition(chainAckRule).ExpectAck(CDS, a.Respond(CDS, "1", edsCluster(asked, eds)), "1")
		r := on("ACK-7").ExpectNack(CDS, a.Respond(CDS, "2", wire.InvalidCluster(written, 2)))
		f.namesOnce(r, asked)
		f.shownOnce(on("OBS-1"), asked, "NACKED, still at version "+f.V("1", asked), func(r observer.Resource) bool {
			return r.State == observer.Nacked && r.Version == f.V("1", asked)
		})
	}},
}

// clientOrderScenarios are the table of paths × the name written as the
// client asked for it, or with its context parameters in the other order.
// The first checks the path's own rules with an xdstp name; the second,
// whose headline is XDSTP-3, the same with the name written otherwise,
// every step that rests on the name checked under XDSTP-3.
func clientOrderScenarios() []*engine.Scenario {
	var out []*engine.Scenario
	for _, p := range clientOrderPaths {
		for _, reorder := range []bool{false, true} {
			id, title, rules := "client/xdstp/parameters-as-asked-"+p.path, "An xdstp name written as the client asked for it, on "+p.what, p.rules
			if reorder {
				id, title = "client/xdstp/parameters-reordered-"+p.path, "An xdstp name written with its context parameters in the other order is the one asked for, on "+p.what
				rules = append([]string{"XDSTP-3"}, p.rules...)
			}
			out = append(out, &engine.Scenario{
				ID:           id,
				Title:        title,
				Requirements: rules,
				Level:        engine.LevelOf(rules[0], results.Must),
				Variants:     allVariants,
				Needs:        append(slices.Clip(xdstpNeeds), targets.NeedObserver),
				// The route names the cluster with its parameters unsorted.
				// Authority A has a server of its own, so that nothing rests
				// on whether the client shares a channel (XDSTP-14).
				Run: fed(fedSetup{own: []string{authA}, names: func(t *engine.T, n *chain) {
					n.CL = xname(authA, CDS, t.Name("cluster"), "zone=z1", "env=prod")
				}}, func(f *F) {
					f.Chain(RDS)
					a := f.On[authA]
					r := a.precondition("RES-1").Expect(CDS)
					i := slices.IndexFunc(r.Names(), func(n string) bool { return xdstp.Same(n, f.CL) })
					if i < 0 {
						a.precondition("RES-1").Fatalf("%s should ask for the cluster %s, in any parameter order", r, f.CL)
					}
					asked := r.Names()[i]
					written, on := asked, func(rule string) *C {
						if rule == "" {
							return a.precondition("RES-1")
						}
						return a.Checking(rule)
					}
					if reorder {
						written, on = otherOrder(asked), func(string) *C { return a.Checking("XDSTP-3") }
					}
					p.run(f, a, on, asked, written)
				}),
			})
		}
	}
	return out
}

// otherOrder is the xdstp name n with the context parameters it carries
// written in the reverse order: the same name (XDSTP-3), another string.
func otherOrder(n string) string {
	base, query, _ := strings.Cut(n, "?")
	kv := strings.Split(query, "&")
	slices.Reverse(kv)
	return base + "?" + strings.Join(kv, "&")
}

// namesOnce checks that a SotW ACK or NACK r lists the resource asked
// for exactly once, in whatever parameter order: it still wants it (RES-1:
// every request lists the full current set), and it is one resource, not
// two (XDSTP-3). A delta reply lists no names.
func (f *F) namesOnce(r *fakeserver.Request, asked string) {
	if r.SotW == nil {
		return
	}
	var same []string
	for _, n := range r.Names() {
		if xdstp.Same(n, asked) {
			same = append(same, n)
		}
	}
	switch len(same) {
	case 0:
		f.Checking("RES-1").Fatalf("%s does not list %s, which the client still wants: a SotW reply lists every resource it wants", r, asked)
	case 1:
	default:
		f.Checking("XDSTP-3").Fatalf("%s lists %s %d times, written %q: one resource, in whatever parameter order", r, asked, len(same), same)
	}
}

// shownOnce waits for the client's status view to show the resource
// asked for, under exactly one name, in whatever parameter order
// (XDSTP-3), satisfying ok (what says how); the view no longer listing it
// satisfies a wait for a deletion. A view showing it twice, under two
// spellings, fails at once.
func (f *F) shownOnce(v *C, asked, what string, ok func(observer.Resource) bool) {
	ctx, cancel := f.untilExit()
	defer cancel()
	deadline := lag.NewDeadline(f.Timeouts.Expect)
	gone := ok(observer.Resource{State: observer.DoesNotExist})
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var last string
	for {
		rs, err := f.observe(ctx, f.Timeouts.Expect)
		if err == nil {
			var shown []observer.Resource
			for _, r := range rs {
				if r.TypeURL == observer.NormalizeTypeURL(CDS.URL) && xdstp.Same(r.Name, asked) {
					shown = append(shown, r)
				}
			}
			switch {
			case len(shown) > 1:
				words := make([]string, len(shown))
				for i, r := range shown {
					words[i] = fmt.Sprintf("%q %s", r.Name, describe(r))
				}
				v.Fatalf("the client's status view shows the cluster %s %d times, as %s: one resource, in whatever parameter order", asked, len(shown), strings.Join(words, ", "))
			case len(shown) == 0 && gone:
				return
			case len(shown) == 1 && ok(shown[0]):
				return
			case len(shown) == 1:
				last = fmt.Sprintf("shows %q %s", shown[0].Name, describe(shown[0]))
			default:
				last = "does not list it"
			}
		} else {
			last = fmt.Sprintf("could not be read: %v", err)
		}
		if deadline.Passed() {
			v.Fatalf("the client's status view should show the cluster %s %s, but it %s", asked, what, last)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			f.fail("waiting for the cluster %s %s: %v", asked, what, ctx.Err())
		}
	}
}
