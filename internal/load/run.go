package load

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/reports/loadreport"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
)

// Target is what a load run drives: the xDS endpoint and, for the shard
// that drives the fixture, the fixture.
type Target struct {
	// Name is the target as given, for the report, with the fixture's
	// description of the server when there is one.
	Name string
	// Address is the --target as given: what the shards of one run
	// share, fixture or not (the report's address).
	Address string
	// Server is the started target.
	Server *targets.Server
	// InProcess is set when the target runs in this process (a built-in),
	// so its CPU and memory count in the harness's figures.
	InProcess bool
}

// ErrNoFixture is returned when the shard that drives the fixture has
// none: the resources the clients subscribe to would never exist.
var ErrNoFixture = errors.New("load needs the target's fixture API (--fixture) on the shard that drives it (shard 0)")

// runner is one load run in progress.
type runner struct {
	// overBudget is the live heap at which the run passed its memory
	// budget and was stopped (0: it did not).
	overBudget atomic.Int64
	p          *plan
	srv        *targets.Server
	col        *collector
	ctx        context.Context // the streams' lifetime
	stop       func()          // ends it

	connMu sync.Mutex
	conns  map[int]*grpc.ClientConn
	dialEr error

	wg        sync.WaitGroup
	closeOnce sync.Once
	jobs      chan job // responses for the workers
	streams   atomic.Int64
	peak      atomic.Int64
	clients   []*client
	made      [4]atomic.Int64 // changes made per phase (driving shard)
	notes     []string

	// fixture counts the fixture calls made and those that set what they
	// asked, for the reason a run that set nothing measured nothing.
	fixture struct {
		calls, ok atomic.Int64
		firstErr  atomic.Pointer[string]
	}
	// suspect asks the liveness watcher (watch) to re-check the target: a
	// stream failed, which is how a target that died shows first.
	suspect chan struct{}

	// names are the names the fixture serves the resources under, where
	// it names them itself; content is set when it builds the content it
	// serves (content.go).
	names   servedNames
	content *content
}

// Run runs the plan o against t and returns its report. It returns an
// error only when the run could not start (a bad plan, no fixture); what
// goes wrong once it runs (streams failing, a fixture call refused, a
// phase not converging) is in the report, and a run that measured
// nothing says why (Report.Unmeasured). ctx cancelled ends the run early
// with what it measured so far (Report.Interrupted). A target found gone
// during the run (t.Server's Died: a failed stream has it re-checked, and
// a fixture that stopped answering marks it so) ends it early too, with
// a note; the caller reads the cause from t.Server.Died.
func Run(ctx context.Context, t Target, o Options, harnessVersion string) (*loadreport.Report, error) {
	p, err := newPlan(o)
	if err != nil {
		return nil, err
	}
	if p.drives() && t.Server.Fixture == nil {
		return nil, ErrNoFixture
	}
	var cm *content
	if p.drives() {
		if cm, err = newContent(p, t.Server.Caps); err != nil {
			return nil, err
		}
	}
	streamsCtx, stopStreams := context.WithCancel(context.WithoutCancel(ctx))
	r := &runner{p: p, srv: t.Server, col: newCollector(p), ctx: streamsCtx, conns: map[int]*grpc.ClientConn{}, jobs: make(chan job), stop: stopStreams, content: cm,
		names: servedNames{shared: sharedResources(t.Server.Caps)}, suspect: make(chan struct{}, 1)}
	defer r.close()
	for range workers() {
		r.wg.Go(r.work)
	}

	// The phases end early when the target is known gone: it died, or its
	// fixture stopped answering (targets.FixtureHangLimit). Waiting out
	// the sync timeout and the settle on it would measure nothing more.
	phasesCtx, stopPhases := context.WithCancel(ctx)
	defer stopPhases()
	if p.Padding > 0 {
		r.note("every resource the run set was padded with %d bytes (--resource-padding)", p.Padding)
	}
	// Past its memory budget the run stops: its streams first, as they
	// hold the memory, then its phases.
	budget := p.MemoryBudget
	if budget == 0 {
		budget = DefaultMemoryBudget(p.myClients())
	}
	mon := startMonitor(budget, func(live int64) {
		r.overBudget.Store(live)
		r.stop()
		stopPhases()
	})
	watched := make(chan struct{})
	endWatch := make(chan struct{})
	go func() {
		defer close(watched)
		r.watch(ctx, stopPhases, endWatch)
	}()

	cut := r.phases(phasesCtx)
	close(endWatch)
	<-watched // bounded: a check in progress is bounded by aliveCheckBound
	r.settleLiveness(ctx)
	interrupted := cut && ctx.Err() != nil
	died := t.Server.Died()
	if died != nil {
		r.note("the run stopped early: %v", died)
	}
	// The report is of what the phases saw: the streams end first, so that
	// nothing counted after a phase ended reaches it.
	r.close()
	mon.stop()
	rep := r.report(t, harnessVersion, mon)
	rep.Interrupted = interrupted
	if !interrupted {
		// An interrupted run is not judged: what it did not measure, it
		// was not given the time to.
		rep.Unmeasured = r.unmeasured()
	}
	if live := r.overBudget.Load(); live != 0 {
		// The harness's own limit, not the target's failing: the run is
		// not judged on what it measured, and fails saying why, in that
		// one line: what else it did not measure (the fixture's calls
		// the stop cancelled, streams it never opened) is the stop's
		// doing, not the target's.
		rep.Unmeasured = []string{fmt.Sprintf(
			"the harness stopped the run at its memory budget: %d MiB live, over the %d MiB budget (--memory-budget), %s; what ran is reported. Each response being received costs about twice its size at once: fewer clients, or a larger budget, measure the rest",
			live>>20, budget>>20, duringWhat(rep))}
	}
	return rep, nil
}

// duringWhat names the phase a run stopped in ("during the churn phase").
func duringWhat(rep *loadreport.Report) string {
	if len(rep.Phases) == 0 {
		return "before any phase"
	}
	return "during the " + rep.Phases[len(rep.Phases)-1].Name + " phase"
}

// watch re-checks the target (CheckAlive) when a stream fails, at most
// once every recheckEvery, and calls stop once the target is known gone;
// it returns when end is closed. ctx is the caller's: a check it cuts
// short gives no verdict.
func (r *runner) watch(ctx context.Context, stop func(), end <-chan struct{}) {
	for {
		select {
		case <-end:
			return
		case <-r.srv.Gone():
			stop()
			return
		case <-r.suspect:
		}
		r.checkAlive(ctx)
		// A live server that ends streams under load (a stream limit, a
		// maximum connection age) fails many: one probe a failed stream
		// would add to its load for nothing.
		t := time.NewTimer(recheckEvery)
		select {
		case <-end:
			t.Stop()
			return
		case <-r.srv.Gone():
			t.Stop()
			stop()
			return
		case <-t.C:
		}
	}
}

// checkAlive re-checks the target within aliveCheckBound.
func (r *runner) checkAlive(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, aliveCheckBound)
	defer cancel()
	_ = r.srv.CheckAlive(cctx) // a dead target is then Died, which is what is read
}

// settleLiveness makes the last check a failed stream asked for and the
// watcher did not come to (it ended with the phases), so that whether
// the target died is known when the run's outcome is read.
func (r *runner) settleLiveness(ctx context.Context) {
	select {
	case <-r.suspect:
		if r.srv.Died() == nil && ctx.Err() == nil {
			r.checkAlive(ctx)
		}
	default:
	}
}

// suspectTarget asks the watcher to re-check the target; it never blocks
// (a check already asked for is the same check).
func (r *runner) suspectTarget() {
	select {
	case r.suspect <- struct{}{}:
	default:
	}
}

// aliveCheckBound bounds one re-check of the target: as the suites'
// engine does, long enough for a probe that timed out to be retried once
// within the default connect timeout of 5 s each.
const aliveCheckBound = 12 * time.Second

// recheckEvery is the least time between two re-checks of the target.
const recheckEvery = time.Second

// unmeasured says why the run measured nothing a verdict could rest on
// (loadreport.Report.Unmeasured), if it did not: no stream opened, a
// fixture that set nothing, an initial sync no client finished, a phase
// whose changes reached no client. Each is a run that would otherwise
// read as a pass: no violation and nothing missed of nothing at all.
func (r *runner) unmeasured() []string {
	p, col := r.p, r.col
	var out []string
	if p.drives() {
		if calls := r.fixture.calls.Load(); calls > 0 && r.fixture.ok.Load() == 0 {
			first := ""
			if e := r.fixture.firstErr.Load(); e != nil {
				first = "; the first: " + *e
			}
			out = append(out, fmt.Sprintf("the fixture set nothing: none of its %d calls succeeded%s", calls, first))
		}
	}
	if len(r.clients) == 0 {
		return out
	}
	if r.peak.Load() == 0 {
		out = append(out, fmt.Sprintf("no stream opened: none of the %d clients had one", len(r.clients)))
		return out // so no phase after connect ran
	}
	if ps := col.phase(phaseSync); ps.ran.Load() && ps.latency.Count() == 0 {
		out = append(out, fmt.Sprintf("no client finished the initial sync: none of the %d had its whole profile", len(r.clients)))
	}
	for _, phase := range []string{phaseChurn, phaseBurst} {
		if !col.phase(phase).ran.Load() {
			continue
		}
		made := r.made[phaseIndex(phase)].Load()
		if p.drives() && made == 0 {
			out = append(out, fmt.Sprintf("the %s phase made no change", phase))
			continue
		}
		if reached := r.reachedAny(phase); !reached {
			out = append(out, fmt.Sprintf("the %s phase measured no change: none of its changes reached any client", phase))
		}
	}
	return out
}

// reachedAny reports whether some client ACKed (or, a bad one, NACKed)
// some change of phase.
func (r *runner) reachedAny(phase string) bool {
	for i, ch := range r.p.changes {
		if ch.phase == phase && r.col.changes[i].acked.Load() > 0 {
			return true
		}
	}
	return false
}

// phases runs the phases in order; it reports whether ctx cut them short.
func (r *runner) phases(ctx context.Context) bool {
	p, col := r.p, r.col
	syncBy := time.Now().Add(p.SyncTimeout)
	if !p.drives() {
		// Its clients' resources come when the driving shard sets them,
		// which may start later than this one.
		syncBy = syncBy.Add(p.StartWait)
	}
	col.arm(phaseSync, int64(p.myClients()))

	if p.drives() {
		if err := r.setAll(ctx, phaseConnect, nil); err != nil {
			r.note("setting the initial resources: %v", err)
		}
	}
	// Connect: every client opens its first streams and subscribes to the
	// first step of its profile; the later steps follow as it goes.
	col.enter(phaseConnect)
	r.clients = make([]*client, 0, p.myClients())
	for i := range p.Clients {
		if p.mine(i) {
			r.clients = append(r.clients, newClient(r, i))
		}
	}
	col.phase(phaseConnect).clients.Store(int64(len(r.clients)))
	connected := make(chan struct{})
	go func() {
		defer close(connected)
		r.each(ctx, func(c *client) {
			if err := c.subscribe(r.ctx, 0); err != nil {
				col.streamError(err.Error())
				r.suspectTarget()
			}
		})
	}()
	// Opening a stream waits for the server (its stream limit, a slow
	// handshake) with no deadline of its own: the sync timeout bounds it,
	// by ending every stream.
	outcome := wait(ctx, connected, time.Until(syncBy))
	if outcome != waitDone {
		r.stop()
		<-connected
	}
	col.leave(phaseConnect)
	switch outcome {
	case waitCancelled:
		return true
	case waitTimedOut:
		r.note("the streams could not all be opened within %s (--sync-timeout): the run stopped there", p.SyncTimeout)
		return false
	}

	// Initial sync: until every client has ACKed its whole profile.
	ps := col.enter(phaseSync)
	ps.clients.Store(int64(len(r.clients)))
	ps.expected.Store(int64(len(r.clients) * len(p.resources)))
	outcome = wait(ctx, ps.done, time.Until(syncBy))
	col.leave(phaseSync)
	r.missedSync()
	switch outcome {
	case waitCancelled:
		return true
	case waitTimedOut:
		r.note("the initial sync did not finish in time (--sync-timeout %s%s): %d clients of %d never had their whole profile", p.SyncTimeout, map[bool]string{true: "", false: ", plus --start-wait on a shard that waits for shard 0"}[p.drives()], ps.pending.Load(), len(r.clients))
	}

	for _, phase := range []string{phaseChurn, phaseBurst} {
		changes := p.phaseChanges(phase)
		if len(changes) == 0 {
			continue
		}
		if r.changePhase(ctx, phase, changes) {
			return true
		}
	}
	return false
}

// workers is how many goroutines decode, check and answer responses:
// enough to keep every core busy while some wait on a send.
func workers() int { return 4 * runtime.GOMAXPROCS(0) }

// work handles responses until the run ends.
func (r *runner) work() {
	for {
		select {
		case j := <-r.jobs:
			j.done <- j.s.decode(j.b)
		case <-r.ctx.Done():
			return
		}
	}
}

// changePhase runs the churn or the burst: the driving shard makes the
// phase's changes on schedule; every shard then waits until its clients
// have all reached the phase's last changes, or Settle has passed.
func (r *runner) changePhase(ctx context.Context, phase string, changes []change) bool {
	p, col := r.p, r.col
	finals := 0
	for _, byPhase := range p.finals {
		if _, ok := byPhase[phase]; ok {
			finals++
		}
	}
	col.arm(phase, int64(finals*len(r.clients)))
	ps := col.enter(phase)
	ps.clients.Store(int64(len(r.clients)))
	ps.expected.Store(int64(len(changes) * len(r.clients)))
	defer col.leave(phase)

	bound := p.Settle
	if p.drives() {
		if phase == phaseChurn && r.holdChurn(ctx) {
			return true
		}
		if cancelled := r.drive(ctx, phase, changes); cancelled {
			return true
		}
	} else {
		// The driving shard may start later than this one: wait for its
		// changes as long as they could take to come, and then some.
		bound = p.StartWait + p.Duration + p.BurstWindow + p.Settle
	}
	switch wait(ctx, ps.done, bound) {
	case waitCancelled:
		r.missed(phase)
		return true
	case waitTimedOut:
		r.note("the %s phase did not converge within %s of its last change: %d client-resource pairs were behind", phase, bound, ps.pending.Load())
	}
	r.missed(phase)
	return false
}

// holdChurn waits, before the churn, for ChurnDelay and ChurnAfter; it
// reports whether ctx ended the wait.
func (r *runner) holdChurn(ctx context.Context) bool {
	if r.p.ChurnAfter != nil {
		switch wait(ctx, r.p.ChurnAfter, r.p.StartWait) {
		case waitCancelled:
			return true
		case waitTimedOut:
			r.note("the churn started after waiting %s for the other shards", r.p.StartWait)
		}
	}
	return r.p.ChurnDelay > 0 && wait(ctx, nil, r.p.ChurnDelay) == waitCancelled
}

// drive makes a phase's changes: the churn's at the planned rate, the
// burst's bad ones at once and, after the burst window, the ones setting
// them right.
func (r *runner) drive(ctx context.Context, phase string, changes []change) bool {
	start := time.Now()
	interval := time.Duration(0)
	if phase == phaseChurn && r.p.Churn > 0 {
		interval = time.Duration(float64(time.Second) / r.p.Churn)
	}
	var late time.Duration
	var windowEnd time.Time
	for k, ch := range changes {
		if phase == phaseBurst && !ch.bad && windowEnd.IsZero() {
			// The burst window, how long the bad resources stay bad,
			// runs from when the last of them is set.
			windowEnd = time.Now().Add(r.p.BurstWindow)
		}
		due := dueAt(phase, ch, k, start, interval, windowEnd)
		if d := time.Until(due); d > 0 {
			if wait(ctx, nil, d) == waitCancelled {
				return true
			}
		} else {
			late = max(late, -d)
		}
		if err := r.setAll(ctx, phase, &ch); err != nil {
			r.note("change %d (%s): %v", ch.id, r.p.resources[ch.res], err)
			if errors.Is(err, errAllFailed) {
				r.note("the fixture refused every call of change %d: the %s phase stopped there", ch.id, phase)
				return false
			}
		}
		r.made[phaseIndex(phase)].Add(1)
	}
	if late > time.Second {
		r.note("the fixture fell behind the %s schedule by up to %s: the planned rate was more than it could take", phase, late.Round(time.Millisecond))
	}
	return false
}

// dueAt is when change k of a phase's changes is due: the churn's one
// interval after the other from start, the burst's bad ones at start, and
// the ones setting them right all at windowEnd (so none of those counts as
// late by the window).
func dueAt(phase string, ch change, k int, start time.Time, interval time.Duration, windowEnd time.Time) time.Time {
	if phase == phaseBurst && !ch.bad {
		return windowEnd
	}
	return start.Add(time.Duration(k) * interval)
}

// sharedResources reports whether the target serves one set of resources
// to every node (its fixture says node_scoped false, as go-control-plane's
// LinearCache's does).
func sharedResources(caps *fixturepb.Capabilities) bool {
	return caps != nil && !caps.GetNodeScoped()
}

// fixtureNodes is how many of the run's nodes the fixture is driven on:
// every one when the target serves each node its own resources, else
// node 0 alone. A target that shares resources between nodes serves one
// resource to every client: setting it once per node would make one
// planned change N updates of that resource, each pushed to the clients
// that are subscribed by then, and the amplification measured would be
// the harness's.
func (r *runner) fixtureNodes() int {
	if r.names.shared {
		return 1
	}
	return r.p.Nodes
}

// setAll sets, on every node the fixture is driven on (fixtureNodes),
// every resource (ch nil: the initial state) or the one ch changes,
// marked with ch's origin.
func (r *runner) setAll(ctx context.Context, phase string, ch *change) error {
	p := r.p
	origin := time.Now().UnixNano()
	res := []int{}
	mk := marker{origin: origin}
	if ch == nil {
		for i := range p.resources {
			res = append(res, i)
		}
	} else {
		res = append(res, ch.res)
		mk.change, mk.bad = ch.id, ch.bad
		r.col.changes[ch.id-1].origin.Store(origin)
	}
	// One change to every node is bounded as a whole, not only call by
	// call: a fixture that hangs would otherwise hold the run for nodes /
	// Parallel times the call bound.
	bound := setAllBound
	if ch == nil {
		bound = p.SyncTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var firstErr error
	var calls, failed int
	var errMu sync.Mutex
	sem := make(chan struct{}, p.Parallel)
	var wg sync.WaitGroup
	for n := 0; n < r.fixtureNodes() && ctx.Err() == nil; n++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			for _, i := range res {
				m := mk
				m.res = i
				err := r.set(ctx, n, i, m)
				errMu.Lock()
				calls++
				if err != nil {
					failed++
					if firstErr == nil {
						firstErr = err
					}
				}
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	switch {
	case firstErr == nil && ctx.Err() != nil:
		return fmt.Errorf("not every node was set within %s", bound)
	case firstErr == nil:
		return nil
	case failed == calls:
		return fmt.Errorf("%w (%d calls): the first: %w", errAllFailed, calls, firstErr)
	}
	return fmt.Errorf("%d of %d fixture calls failed; the first: %w", failed, calls, firstErr)
}

// setAllBound bounds one change's fan-out to every node.
const setAllBound = 2 * time.Minute

// errAllFailed is a fan-out of which every fixture call failed.
var errAllFailed = errors.New("every fixture call failed")

// set sets resource i on node n, carrying m stamped with the moment it
// is asked of the fixture, and notes the name it is served under.
func (r *runner) set(ctx context.Context, n, i int, m marker) error {
	m.set = time.Now().UnixNano()
	a, err := r.p.build(i, m)
	if err != nil {
		return err
	}
	res, node := r.p.resources[i], r.p.nodeID(n)
	callCtx, cancel := context.WithTimeout(ctx, fixtureCallTimeout)
	defer cancel()
	r.fixture.calls.Add(1)
	s, err := r.srv.Fixture.Set(callCtx, node, res.t, res.name, a)
	if err != nil {
		err = fmt.Errorf("setting %s on %s: %w", res, node, err)
		// What the fixture said may echo call metadata: scrubbed, as
		// every other thing a target says that the report keeps.
		msg := transcript.Clip(transcript.Scrub(err.Error()), 512)
		r.fixture.firstErr.CompareAndSwap(nil, &msg)
		return err
	}
	r.fixture.ok.Add(1)
	if r.names.note(r.p, n, i, s.Name) {
		return fmt.Errorf("setting %s on %s: the fixture serves it as %q now, a name its clients did not subscribe to", res, node, s.Name)
	}
	if r.content != nil {
		if err := r.content.check(r.p, i, m.change, s.Revision); err != nil {
			return fmt.Errorf("setting %s on %s: %w", res, node, err)
		}
	}
	return nil
}

// fixtureCallTimeout bounds one fixture call.
const fixtureCallTimeout = 30 * time.Second

// each calls f for every client of the shard, p.Parallel at a time.
func (r *runner) each(ctx context.Context, f func(*client)) {
	sem := make(chan struct{}, r.p.Parallel)
	var wg sync.WaitGroup
	for _, c := range r.clients {
		// The streams' context ends too when the run gives up on opening
		// them: the clients not started then are not the server's errors.
		if ctx.Err() != nil || r.ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(c)
		})
	}
	wg.Wait()
}

// connFor is the connection of stream n of client idx: the shard's
// streams are numbered client by client, and each StreamsPerConn of them
// share one connection.
func (r *runner) connFor(idx, n int) grpc.ClientConnInterface {
	local := idx / r.p.Shards
	k := (local*r.p.streamsPerClient() + n) / r.p.StreamsPerConn
	r.connMu.Lock()
	defer r.connMu.Unlock()
	if c := r.conns[k]; c != nil {
		return c
	}
	// Many connections, small messages: a connection's write buffer is
	// given back between writes and its read buffer is small, so ten
	// thousand connections do not hold 64 KiB of buffers each.
	opts := append(slices.Clone(r.srv.Dial), grpc.WithSharedWriteBuffer(true), grpc.WithReadBufferSize(connReadBuffer))
	c, err := grpc.NewClient(r.srv.Addr, opts...)
	if err != nil {
		return failedConn{err}
	}
	r.conns[k] = c
	return c
}

// connReadBuffer is a connection's read buffer (gRPC's default: 32 KiB).
const connReadBuffer = 8 << 10

// failedConn is a connection that could not be made: every stream on it
// fails with why.
type failedConn struct{ err error }

func (f failedConn) Invoke(context.Context, string, any, any, ...grpc.CallOption) error {
	return f.err
}
func (f failedConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, f.err
}

// streamCtx is the context a stream opens with: the run's, with the
// target's call metadata.
func (r *runner) streamCtx(ctx context.Context) context.Context {
	if len(r.srv.Metadata) > 0 {
		return metadata.NewOutgoingContext(ctx, metadata.New(r.srv.Metadata))
	}
	return ctx
}

func (r *runner) streamOpened() {
	n := r.streams.Add(1)
	for {
		old := r.peak.Load()
		if n <= old || r.peak.CompareAndSwap(old, n) {
			return
		}
	}
}

func (r *runner) streamClosed() { r.streams.Add(-1) }

// noteOrigin learns a change's origin from its marker: a shard that does
// not drive the fixture knows it no other way.
func (r *runner) noteOrigin(m marker) {
	if m.change > 0 {
		r.col.changes[m.change-1].origin.CompareAndSwap(0, m.origin)
	}
}

// missedSync counts the clients that never had their whole profile.
func (r *runner) missedSync() {
	n := int64(0)
	for _, c := range r.clients {
		c.mu.Lock()
		if !c.synced {
			n++
		}
		c.mu.Unlock()
	}
	r.col.phase(phaseSync).missed.Store(n)
}

// missed counts, at the end of a phase, the (client, resource) pairs not
// at the phase's last change of the resource.
func (r *runner) missed(phase string) {
	n := int64(0)
	for _, c := range r.clients {
		c.mu.Lock()
		for res, byPhase := range r.p.finals {
			if final, ok := byPhase[phase]; ok && c.last[res] < final {
				n++
			}
		}
		c.mu.Unlock()
	}
	r.col.phase(phase).missed.Store(n)
}

func (r *runner) note(format string, args ...any) {
	r.connMu.Lock()
	defer r.connMu.Unlock()
	switch {
	case len(r.notes) < maxNotes:
		r.notes = append(r.notes, fmt.Sprintf(format, args...))
	case len(r.notes) == maxNotes:
		r.notes = append(r.notes, "(further notes left out)")
	}
}

// maxNotes bounds a report's notes: a fixture failing every change of a
// long churn would otherwise add one each.
const maxNotes = 32

// close ends every stream and connection, waits (bounded) for the receive
// loops, and, on the driving shard, removes what the run set. It does so
// once; later calls return at once.
func (r *runner) close() { r.closeOnce.Do(r.closeNow) }

func (r *runner) closeNow() {
	r.stop()
	r.connMu.Lock()
	for _, c := range r.conns {
		_ = c.Close()
	}
	r.connMu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeBound):
	}
	// In a sharded run the other shards' clients may still be connected:
	// removing the resources now would push them deletions mid-run. The
	// run id names what is left, for the server's own clean-up.
	if r.p.drives() && r.p.Shards == 1 && r.srv.Fixture != nil && r.srv.Died() == nil {
		r.reset()
	}
}

// closeBound bounds the wait for the receive loops to end once their
// connections are closed (they end at once; this is a backstop).
const closeBound = 5 * time.Second

// reset removes, best effort and bounded, what the run set on every node.
func (r *runner) reset() {
	ctx, cancel := context.WithTimeout(context.Background(), resetBound)
	defer cancel()
	sem := make(chan struct{}, r.p.Parallel)
	var wg sync.WaitGroup
	for n := 0; n < r.fixtureNodes() && ctx.Err() == nil; n++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_ = r.srv.Fixture.Reset(ctx, r.p.nodeID(n))
		})
	}
	wg.Wait()
}

// resetBound bounds the clean-up at the end of a run.
const resetBound = 30 * time.Second

// waitOutcome is how a bounded wait ended.
type waitOutcome int

const (
	waitDone waitOutcome = iota
	waitTimedOut
	waitCancelled
)

// wait waits for done (nil: nothing), d, or ctx, whichever comes first.
func wait(ctx context.Context, done <-chan struct{}, d time.Duration) waitOutcome {
	if d <= 0 {
		d = time.Nanosecond
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return waitDone
	case <-t.C:
		return waitTimedOut
	case <-ctx.Done():
		return waitCancelled
	}
}

// report builds the report from what was collected.
func (r *runner) report(t Target, harnessVersion string, mon *monitor) *loadreport.Report {
	p, col := r.p, r.col
	rep := &loadreport.Report{
		Format: loadreport.Format, HarnessVersion: harnessVersion, Target: t.Name, Address: t.Address, RunID: p.RunID,
		Plan:    r.reportPlan(),
		Shards:  []int{p.Shard},
		Started: col.started, DurationNS: int64(time.Since(col.started)),
	}
	for i, ch := range p.changes {
		if i >= loadreport.MaxChanges {
			rep.ChangesDropped = int64(len(p.changes) - loadreport.MaxChanges)
			break
		}
		st := &col.changes[i]
		rep.Changes = append(rep.Changes, loadreport.Change{
			ID: ch.id, Phase: ch.phase, Resource: p.resources[ch.res].String(), Bad: ch.bad,
			OriginUnixNS: st.origin.Load(), Expected: int64(len(r.clients)), Acked: st.acked.Load(), LastAckNS: st.lastAck.Load(),
		})
	}
	for i, name := range phaseNames {
		ps := col.phases[i]
		if !ps.ran.Load() {
			continue
		}
		end := ps.end.Load()
		if end == 0 {
			end = time.Now().UnixNano()
		}
		ph := loadreport.Phase{
			Name: name, StartNS: ps.start.Load() - col.started.UnixNano(), EndNS: end - col.started.UnixNano(),
			Clients: ps.clients.Load(), Changes: r.made[i].Load(), Expected: ps.expected.Load(),
			Responses: ps.responses.Load(), Acks: ps.acks.Load(), Nacks: ps.nacks.Load(), Resends: ps.resends.Load(),
			Missed: ps.missed.Load(), Violations: ps.violations.Load(), Errors: ps.errors.Load(),
			Latency: ps.latency,
		}
		if name == phaseChurn || name == phaseBurst {
			ph.Convergence = loadreport.Convergence(rep.Changes, name)
			ph.Amplification = loadreport.Amplification(ph.Responses, ph.Expected)
		} else {
			ph.Convergence = loadreport.NewHistogram()
		}
		rep.Phases = append(rep.Phases, ph)
	}
	col.mu.Lock()
	for _, s := range col.timeline {
		rep.Timeline = append(rep.Timeline, *s)
	}
	for _, v := range col.violations {
		rep.Violations = append(rep.Violations, *v)
	}
	col.mu.Unlock()
	sortReport(rep)
	h := mon.figures(p.Shard, r.peak.Load())
	h.InProcessTarget = t.InProcess
	rep.Harness = []loadreport.Harness{h}
	rep.Notes = append(rep.Notes, r.notes...)
	if n := col.errorNote(); n != "" {
		rep.Notes = append(rep.Notes, n)
	}
	if h.Saturated {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the harness was saturated (%.0f%% CPU of %d cores over the run, or all of them for %d s in a row; scheduling lag up to %s): its latencies say more about the harness than about the server; shard the run (--shard)", h.CPUPercent, h.Cores, saturatedSeconds, time.Duration(h.LagMaxNS).Round(time.Millisecond)))
	}
	if t.InProcess {
		rep.Notes = append(rep.Notes, "the target ran in the harness's process: the CPU and memory figures include it")
	}
	return rep
}

func (r *runner) reportPlan() loadreport.Plan {
	p := r.p
	var churnTypes []string
	for _, t := range p.ChurnTypes {
		churnTypes = append(churnTypes, t.Short)
	}
	tr := "off"
	if p.SampleEvery > 0 {
		tr = fmt.Sprintf("sampled:%d", p.SampleEvery)
	}
	return loadreport.Plan{
		Clients: p.Clients, Nodes: p.Nodes, Profile: p.profile, Resources: p.resourceStrings(), Variant: p.Variant.String(),
		StreamsPerConn: p.StreamsPerConn, Churn: p.Churn, ChurnTypes: churnTypes, DurationNS: int64(p.Duration),
		NackBurst: p.NackBurst, Shards: p.Shards, Transcripts: tr,
	}
}

// sortReport puts the report's lists in a stable order.
func sortReport(rep *loadreport.Report) {
	slices.SortFunc(rep.Timeline, func(a, b loadreport.Second) int { return cmp.Compare(a.UnixS, b.UnixS) })
	slices.SortFunc(rep.Violations, func(a, b loadreport.Violation) int { return cmp.Compare(a.Rule, b.Rule) })
}
