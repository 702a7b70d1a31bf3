package loadreport

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// sim is a synthetic load run: what every client did with every change,
// drawn once from a fixed seed. build turns the part of it that some
// shards ran into the report those shards would write, so that a merge of
// shard reports can be compared with the report of the same values built
// in one go.
type sim struct {
	started time.Time
	clients int
	shards  int
	// connect and sync are each client's connect and initial-sync
	// latency.
	connect, sync []time.Duration
	changes       []simChange
	// ack[client][change] is the client's push→ACK latency of the change,
	// or -1 when it never ACKed it.
	ack [][]time.Duration
	// resends[client] counts its resends in the churn phase.
	resends []int64
}

type simChange struct {
	id       int64
	phase    string
	resource string
	bad      bool
	origin   time.Time
}

func newSim(clients, shards int) *sim {
	rng := rand.New(rand.NewPCG(15, 4))
	s := &sim{started: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), clients: clients, shards: shards}
	for range clients {
		s.connect = append(s.connect, time.Duration(1+rng.IntN(20_000))*time.Microsecond)
		s.sync = append(s.sync, time.Duration(5+rng.IntN(900))*time.Millisecond)
		s.resends = append(s.resends, int64(rng.IntN(3)))
	}
	// 40 churn changes over 4 s, then 3 bad ones in the burst.
	for i := range 43 {
		c := simChange{id: int64(i + 1), phase: PhaseChurn, resource: fmt.Sprintf("cds/c%d", i%5),
			origin: s.started.Add(2*time.Second + time.Duration(i)*100*time.Millisecond)}
		if i >= 40 {
			c.phase, c.bad, c.resource = PhaseBurst, true, fmt.Sprintf("lds/bad%d", i)
		}
		s.changes = append(s.changes, c)
	}
	for range clients {
		row := make([]time.Duration, len(s.changes))
		for j := range row {
			switch r := rng.IntN(1000); {
			case r < 8:
				row[j] = -1 // never ACKed
			case r < 12:
				row[j] = time.Duration(2+rng.IntN(3)) * time.Second // a slow tail
			case r == 12:
				row[j] = HistogramMax + time.Minute // past the histogram's range
			default:
				row[j] = time.Duration(200+rng.IntN(80_000)) * time.Microsecond
			}
		}
		s.ack = append(s.ack, row)
	}
	return s
}

// shardOf is the shard that runs a client.
func (s *sim) shardOf(client int) int { return client % s.shards }

// shardStart is when a shard started: each a little after the one
// before, as separate processes would.
func (s *sim) shardStart(shard int) time.Time {
	return s.started.Add(time.Duration(shard) * 7 * time.Millisecond)
}

// build is the report the given shards would write, run as one process
// (a merge of their own reports must equal it, notes aside).
func (s *sim) build(shards ...int) *Report {
	in := func(c int) bool { return slices.Contains(shards, s.shardOf(c)) }
	r := &Report{
		Format: Format, HarnessVersion: "v0.9.0-test", Target: "cp.example:18000", RunID: "run-15",
		Plan: Plan{Clients: s.clients, Nodes: s.clients, Profile: "grpc", Resources: []string{"lds/*", "cds/*"},
			Variant: "sotw-ads", StreamsPerConn: 1, Churn: 10, ChurnTypes: []string{"cds"}, DurationNS: int64(4 * time.Second),
			NackBurst: 3, Shards: s.shards, Transcripts: "off"},
		Shards: slices.Sorted(slices.Values(shards)),
	}
	r.Started = s.shardStart(r.Shards[0])
	var end time.Time
	for _, sh := range r.Shards {
		end = maxTime(end, s.shardStart(sh).Add(6*time.Second+time.Duration(sh)*time.Millisecond))
	}
	r.DurationNS = int64(end.Sub(r.Started))

	// Each phase starts and ends at a fixed time after its shard started.
	bounds := map[string][2]time.Duration{PhaseConnect: {0, time.Second}, PhaseInitialSync: {time.Second, 2 * time.Second},
		PhaseChurn: {2 * time.Second, 5 * time.Second}, PhaseBurst: {5 * time.Second, 6 * time.Second}}
	phase := func(name string) Phase {
		p := Phase{Name: name, Latency: NewHistogram(), StartNS: 1 << 62}
		for _, sh := range r.Shards {
			p.StartNS = min(p.StartNS, int64(s.shardStart(sh).Add(bounds[name][0]).Sub(r.Started)))
			p.EndNS = max(p.EndNS, int64(s.shardStart(sh).Add(bounds[name][1]).Sub(r.Started)))
		}
		return p
	}
	connect, sync, churn, burst := phase(PhaseConnect), phase(PhaseInitialSync), phase(PhaseChurn), phase(PhaseBurst)
	timeline := map[int64]*Second{}
	for c := range s.clients {
		if !in(c) {
			continue
		}
		for _, p := range []*Phase{&connect, &sync, &churn, &burst} {
			p.Clients++
		}
		connect.Responses++
		connect.Latency.Record(s.connect[c])
		sync.Responses += 2
		sync.Acks += 2
		sync.Latency.Record(s.sync[c])
		churn.Resends += s.resends[c]
		if s.connect[c] > 19*time.Millisecond {
			connect.Errors++
		}
	}
	for j, ch := range s.changes {
		p := &churn
		if ch.phase == PhaseBurst {
			p = &burst
		}
		p.Changes++ // every shard knows every change: the plan is shared
		m := Change{ID: ch.id, Phase: ch.phase, Resource: ch.resource, Bad: ch.bad, OriginUnixNS: ch.origin.UnixNano()}
		for c := range s.clients {
			if !in(c) {
				continue
			}
			m.Expected++
			p.Expected++
			lat := s.ack[c][j]
			if lat < 0 {
				p.Missed++
				continue
			}
			m.Acked++
			m.LastAckNS = max(m.LastAckNS, int64(lat))
			p.Responses++
			if ch.bad {
				p.Nacks++
			} else {
				p.Acks++
			}
			p.Latency.Record(lat)
			at := ch.origin.Add(lat)
			sec := timeline[at.Unix()]
			if sec == nil {
				sec = &Second{UnixS: at.Unix()}
				timeline[at.Unix()] = sec
			}
			sec.Responses++
			if ch.bad {
				sec.Nacks++
			} else {
				sec.Acks++
				sec.LatencyCount++
				sec.LatencySumNS += int64(lat)
				sec.LatencyMaxNS = max(sec.LatencyMaxNS, int64(lat))
			}
		}
		r.Changes = append(r.Changes, m)
	}
	for _, p := range []*Phase{&churn, &burst} {
		p.Responses += p.Resends
		p.Convergence = Convergence(r.Changes, p.Name)
		p.Amplification = Amplification(p.Responses, p.Expected)
	}
	connect.Convergence, sync.Convergence = NewHistogram(), NewHistogram()
	r.Phases = []Phase{connect, sync, churn, burst}
	for _, sec := range timeline {
		r.Timeline = append(r.Timeline, *sec)
	}
	slices.SortFunc(r.Timeline, func(a, b Second) int { return int(a.UnixS - b.UnixS) })

	// Every seventh client sees NONCE-7, every eleventh RES-4; the first
	// instance is the lowest client's.
	for _, v := range []struct {
		rule, level string
		every       int
	}{{"NONCE-7", "SHOULD", 7}, {"RES-4", "MUST", 11}} {
		viol := Violation{Rule: v.rule, Level: v.level}
		for c := range s.clients {
			if in(c) && c%v.every == 0 {
				if viol.Count == 0 {
					viol.Message, viol.Client = fmt.Sprintf("%s broken by client %d", v.rule, c), fmt.Sprintf("client-%d", c)
				}
				viol.Count++
				churn.Violations++
			}
		}
		if viol.Count > 0 {
			r.Violations = append(r.Violations, viol)
		}
	}
	r.Phases[2] = churn
	slices.SortFunc(r.Violations, func(a, b Violation) int { return compareStrings(a.Rule, b.Rule) })
	for _, sh := range r.Shards {
		r.Harness = append(r.Harness, Harness{Shard: sh, Streams: int64(s.clients / s.shards), CPUSeconds: 1.5 + float64(sh), CPUPercent: 25 + float64(sh),
			Cores: 2, PeakRSSBytes: 64 << 20, BaselineRSSBytes: 20 << 20, BytesPerStream: 40 << 10, InProcessTarget: sh == 0, HeapBytes: 32 << 20, LagMaxNS: int64(3 * time.Millisecond), Saturated: sh == 1})
	}
	// Every shard says the same of the fixture; a saturated one says so.
	r.Notes = []string{"the fixture kept up with the planned churn"}
	for _, sh := range r.Shards {
		if sh == 1 {
			r.Notes = append(r.Notes, "shard 1 was saturated: its latencies say more about the harness than about the server")
		}
	}
	return r
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
