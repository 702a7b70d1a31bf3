package load

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/reports/loadreport"
	"github.com/xdsconform/xdsconform/transcript"
)

// The phases, by index.
const (
	phaseConnect = loadreport.PhaseConnect
	phaseSync    = loadreport.PhaseInitialSync
	phaseChurn   = loadreport.PhaseChurn
	phaseBurst   = loadreport.PhaseBurst
)

var phaseNames = []string{phaseConnect, phaseSync, phaseChurn, phaseBurst}

func phaseIndex(name string) int {
	for i, n := range phaseNames {
		if n == name {
			return i
		}
	}
	return 0
}

// phaseStats counts one phase. The counters are atomics: thousands of
// receive loops add to them at once.
type phaseStats struct {
	ran        atomic.Bool
	start, end atomic.Int64 // Unix ns
	clients    atomic.Int64
	changes    atomic.Int64
	expected   atomic.Int64
	responses  atomic.Int64
	acks       atomic.Int64
	nacks      atomic.Int64
	resends    atomic.Int64
	missed     atomic.Int64
	violations atomic.Int64
	errors     atomic.Int64
	latency    *loadreport.Histogram

	pending atomic.Int64  // (client, resource) pairs still to reach the phase's final changes
	done    chan struct{} // closed when pending reaches 0
	once    sync.Once
}

// changeStats counts one planned change.
type changeStats struct {
	origin  atomic.Int64 // Unix ns, from the marker (or the driver)
	acked   atomic.Int64
	lastAck atomic.Int64 // ns from origin
}

// collector gathers what every client saw.
type collector struct {
	started time.Time
	onPhase func(string)
	cur     atomic.Int32 // index of the current phase
	phases  [4]*phaseStats
	changes []changeStats // index = change id - 1

	mu         sync.Mutex
	timeline   map[int64]*loadreport.Second
	violations map[string]*loadreport.Violation
	firstErr   string
}

// maxTimeline bounds the timeline: a day of seconds.
const maxTimeline = 86400

func newCollector(p *plan) *collector {
	c := &collector{started: time.Now(), onPhase: p.OnPhase, changes: make([]changeStats, len(p.changes)), timeline: map[int64]*loadreport.Second{}, violations: map[string]*loadreport.Violation{}}
	for i := range c.phases {
		c.phases[i] = &phaseStats{latency: loadreport.NewHistogram(), done: make(chan struct{})}
	}
	return c
}

// phase is the phase named name.
func (c *collector) phase(name string) *phaseStats { return c.phases[phaseIndex(name)] }

// enter makes phase the current one.
func (c *collector) enter(phase string) *phaseStats {
	if c.onPhase != nil {
		c.onPhase(phase)
	}
	i := phaseIndex(phase)
	ps := c.phases[i]
	if ps.ran.CompareAndSwap(false, true) {
		ps.start.Store(time.Now().UnixNano())
	}
	c.cur.Store(int32(i))
	return ps
}

// leave ends phase.
func (c *collector) leave(phase string) {
	c.phase(phase).end.Store(time.Now().UnixNano())
}

// current is the current phase.
func (c *collector) current() *phaseStats { return c.phases[c.cur.Load()] }

// arm sets how many (client, resource) pairs must reach phase's final
// changes; 0 closes its done at once.
func (c *collector) arm(phase string, n int64) {
	ps := c.phase(phase)
	if ps.pending.Add(n) <= 0 {
		ps.once.Do(func() { close(ps.done) })
	}
}

// reached counts one pair reaching its final change of phase.
func (c *collector) reached(phase string) {
	ps := c.phase(phase)
	if ps.pending.Add(-1) == 0 {
		ps.once.Do(func() { close(ps.done) })
	}
}

// phaseOf is the phase a response counts in: the phase of the latest
// change it brings (the initial sync for the initial state), or, when it
// brings none, the phase this shard is in. So the shards of a run count a
// push in the same phase, whenever each of them moved on.
func (c *collector) phaseOf(p *plan, latest int64) *phaseStats {
	switch {
	case latest > 0:
		return c.phase(p.changes[latest-1].phase)
	case latest == 0:
		return c.phase(phaseSync)
	}
	if i := c.cur.Load(); i > 0 {
		return c.phases[i]
	}
	return c.phase(phaseSync)
}

// response counts a response received at now, in ps.
func (c *collector) response(ps *phaseStats, now time.Time) {
	ps.responses.Add(1)
	c.second(now, func(s *loadreport.Second) { s.Responses++ })
}

// answered counts an ACK (or a NACK), sent at now, of the change m
// brings: its push→ACK latency from m's set, the change's convergence
// from its origin.
func (c *collector) answered(p *plan, m marker, begun, now time.Time) {
	ch := p.changes[m.change-1]
	ps := c.phase(ch.phase)
	st := &c.changes[m.change-1]
	since := func(unixNS int64) time.Duration {
		d := now.Sub(time.Unix(0, unixNS))
		return max(d, 0) // another shard's clock ahead of ours
	}
	set := m.set
	if set == 0 {
		set = st.origin.Load()
	}
	lat, conv := since(set), since(st.origin.Load())
	st.acked.Add(1)
	for {
		old := st.lastAck.Load()
		if int64(conv) <= old || st.lastAck.CompareAndSwap(old, int64(conv)) {
			break
		}
	}
	// Push→ACK latency is of pushes: not of a NACK (the burst counts
	// those), nor of a change made before the client first asked (a late
	// shard's clients get it as their initial state).
	if m.bad || time.Unix(0, set).Before(begun) {
		return
	}
	ps.latency.Record(lat)
	c.second(now, func(s *loadreport.Second) {
		s.LatencyCount++
		s.LatencySumNS += int64(lat)
		s.LatencyMaxNS = max(s.LatencyMaxNS, int64(lat))
	})
}

// sent counts an ACK or a NACK on the wire, in ps.
func (c *collector) sent(ps *phaseStats, nack bool, now time.Time) {
	if nack {
		ps.nacks.Add(1)
	} else {
		ps.acks.Add(1)
	}
	c.second(now, func(s *loadreport.Second) {
		if nack {
			s.Nacks++
		} else {
			s.Acks++
		}
	})
}

func (c *collector) second(now time.Time, f func(*loadreport.Second)) {
	k := now.Unix()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.timeline[k]
	if s == nil {
		if len(c.timeline) >= maxTimeline {
			return
		}
		s = &loadreport.Second{UnixS: k}
		c.timeline[k] = s
	}
	f(s)
}

// violation counts a broken rule; the first of each rule keeps its
// evidence (scrubbed and clipped, since the peer chose it) and, from a
// sampled client, its transcript.
func (c *collector) violation(rule, msg, client string, tr *transcript.Transcript) {
	c.current().violations.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if v := c.violations[rule]; v != nil {
		v.Count++
		return
	}
	if len(c.violations) >= maxRules {
		return
	}
	level := ""
	if r, ok := requirements.Lookup(rule); ok {
		level = r.Strength
	}
	v := &loadreport.Violation{Rule: rule, Level: level, Count: 1, Message: transcript.Clip(transcript.Scrub(msg), 2048), Client: client}
	if tr != nil {
		if b, err := transcriptJSON(tr); err == nil {
			v.Transcript = b
		}
	}
	c.violations[rule] = v
}

// maxRules bounds the distinct rules kept.
const maxRules = 64

// streamError counts a stream that ended with an error.
func (c *collector) streamError(note string) {
	c.current().errors.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.firstErr == "" {
		c.firstErr = transcript.Clip(transcript.Scrub(note), 512)
	}
}

// errorNote says how streams failed, if any did.
func (c *collector) errorNote() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.firstErr == "" {
		return ""
	}
	n := int64(0)
	for _, ps := range c.phases {
		n += ps.errors.Load()
	}
	return fmt.Sprintf("%d streams failed or ended early; the first: %s", n, c.firstErr)
}

// transcriptEntries bounds the transcript a violation keeps: its last
// entries, which show the response that broke the rule.
const transcriptEntries = 32

// transcriptJSON renders the end of tr, scrubbed, for a violation.
func transcriptJSON(tr *transcript.Transcript) ([]byte, error) {
	es := transcript.ScrubEntries(tr.Entries())
	if len(es) > transcriptEntries {
		es = es[len(es)-transcriptEntries:]
	}
	return json.Marshal(es)
}
