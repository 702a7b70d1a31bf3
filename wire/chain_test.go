package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/protobuf/proto"
)

// A change of revision must show in fields a gRPC client keeps: grpc-js
// compares what it parsed and, finding no change, reports the old version
// in CSDS. The cluster's connect_timeout alone is not parsed by gRPC.
func TestChainRevisionsDifferWhereGRPCLooks(t *testing.T) {
	for name, pair := range map[string][2]proto.Message{
		"cluster circuit breakers":     {ClientCluster("c", 1).GetCircuitBreakers(), ClientCluster("c", 2).GetCircuitBreakers()},
		"dns cluster circuit breakers": {ClientDNSCluster("c", 1).GetCircuitBreakers(), ClientDNSCluster("c", 2).GetCircuitBreakers()},
		"listener":                     {ClientListener("l", "r", 1), ClientListener("l", "r", 2)},
		"route":                        {ClientRoute("r", "c", 1), ClientRoute("r", "c", 2)},
		"endpoints":                    {ClientEndpoints("c", 1), ClientEndpoints("c", 2)},
	} {
		assert.False(t, proto.Equal(pair[0], pair[1]), name)
	}
}

func TestRenamed(t *testing.T) {
	for _, typ := range AllTypes {
		a, err := Renamed(BuildAny(typ, "old", 1), "new")
		assert.NoError(t, err, typ.Short)
		m, err := a.UnmarshalNew()
		assert.NoError(t, err, typ.Short)
		assert.Equal(t, "new", NameOf(m), typ.Short)
	}
}
