package load

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/wire"
)

func okOptions() Options {
	return Options{Clients: 10, StreamsPerConn: 1, Variant: wire.SotWADS, Shards: 1, RunID: "t", Churn: 2, Duration: 2 * time.Second}
}

func TestPlanRefusesWhatCannotRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Options)
		wants string
	}{
		{"no clients", func(o *Options) { o.Clients = 0 }, "--clients 0"},
		{"more nodes than clients", func(o *Options) { o.Nodes = 11 }, "--nodes 11"},
		{"no streams a connection", func(o *Options) { o.StreamsPerConn = 0 }, "--streams-per-conn 0"},
		{"negative churn", func(o *Options) { o.Churn = -1 }, "--churn -1"},
		{"churn not a number", func(o *Options) { o.Churn = math.NaN() }, "--churn NaN"},
		{"negative duration", func(o *Options) { o.Duration = -time.Second }, "--duration -1s"},
		{"shard out of range", func(o *Options) { o.Shard, o.Shards = 2, 2 }, "--shard 2/2"},
		{"more shards than clients", func(o *Options) { o.Shards = 11 }, "more shards than --clients"},
		{"run id with a slash", func(o *Options) { o.RunID = "a/b" }, "--run-id"},
		{"REST", func(o *Options) { o.Variant = wire.Variant{Protocol: wire.SotW, Transport: wire.RESTPoll} }, "gRPC streams only"},
		{"unknown type", func(o *Options) { o.Profile = "XDS=a" }, "is not TYPE=NAME"},
		{"wildcard EDS", func(o *Options) { o.Profile = "EDS=*" }, "cannot be subscribed by wildcard"},
		{"type twice", func(o *Options) { o.Profile = "CDS=a;CDS=b" }, "listed twice"},
		{"churn of a type not in the profile", func(o *Options) { o.Profile = "CDS=a"; o.ChurnTypes = []wire.Type{wire.Endpoint} }, "no resource of those types"},
		{"too many changes", func(o *Options) { o.Churn = 10000; o.Duration = time.Hour }, "past the bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := okOptions()
			tc.edit(&o)
			_, err := newPlan(o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wants)
		})
	}
}

func TestProfiles(t *testing.T) {
	for _, tc := range []struct {
		profile   string
		resources []string
		steps     int
	}{
		{"grpc", []string{"LDS/load-t-listener", "RDS/load-t-route", "CDS/load-t-cluster", "EDS/load-t-cluster"}, 4},
		{"envoy", []string{"LDS/*", "CDS/*", "RDS/load-t-route", "EDS/load-t-cluster"}, 2},
		{"CDS=a,b;EDS=a,b", []string{"CDS/load-t-a", "CDS/load-t-b", "EDS/load-t-a", "EDS/load-t-b"}, 2},
		{"lds=*", []string{"LDS/*"}, 1},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			o := okOptions()
			o.Profile = tc.profile
			p, err := newPlan(o)
			require.NoError(t, err)
			assert.Equal(t, tc.resources, p.resourceStrings())
			assert.Len(t, p.steps, tc.steps)
		})
	}
}

// The schedule every shard works out alone must be the same, and each
// resource's last change per phase is the one clients end the phase on.
func TestSchedule(t *testing.T) {
	o := okOptions()
	o.Churn, o.Duration, o.NackBurst = 3, 2*time.Second, 5
	o.ChurnTypes = []wire.Type{wire.Cluster, wire.Endpoint}
	p, err := newPlan(o)
	require.NoError(t, err)
	churn, burst := p.phaseChanges(phaseChurn), p.phaseChanges(phaseBurst)
	require.Len(t, churn, 6)
	assert.Equal(t, []int{2, 3, 2, 3, 2, 3}, resOf(churn), "round-robin over the churned types' resources")
	// Five bad changes over two resources, then one good change each.
	require.Len(t, burst, 7)
	assert.Equal(t, []bool{true, true, true, true, true, false, false}, badOf(burst))
	assert.Equal(t, int64(5), p.finals[2][phaseChurn])
	assert.Equal(t, int64(6), p.finals[3][phaseChurn])
	assert.Equal(t, int64(12), p.finals[2][phaseBurst], "the good change after the bad ones")
	assert.Equal(t, int64(13), p.finals[3][phaseBurst])

	o.Shard, o.Shards = 1, 3
	q, err := newPlan(o)
	require.NoError(t, err)
	assert.Equal(t, p.changes, q.changes, "every shard plans the same changes")
}

func resOf(cs []change) []int {
	var out []int
	for _, c := range cs {
		out = append(out, c.res)
	}
	return out
}

func badOf(cs []change) []bool {
	var out []bool
	for _, c := range cs {
		out = append(out, c.bad)
	}
	return out
}

func TestShardsSplitEveryClientOnce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7} {
		seen := map[int]int{}
		total := 0
		for s := range n {
			o := okOptions()
			o.Clients, o.Shard, o.Shards = 23, s, n
			p, err := newPlan(o)
			require.NoError(t, err)
			for i := range o.Clients {
				if p.mine(i) {
					seen[i]++
				}
			}
			total += p.myClients()
		}
		assert.Len(t, seen, 23, "%d shards", n)
		assert.Equal(t, 23, total, "%d shards", n)
		for i, k := range seen {
			assert.Equal(t, 1, k, "client %d of %d shards", i, n)
		}
	}
}
