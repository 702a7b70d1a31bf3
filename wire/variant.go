package wire

import (
	"fmt"
	"strings"
)

// Protocol is the discovery protocol flavour spoken on a stream.
type Protocol int

const (
	// SotW is the state-of-the-world protocol (DiscoveryRequest/Response).
	SotW Protocol = iota
	// Delta is the incremental protocol (DeltaDiscoveryRequest/Response).
	Delta
)

// String returns "sotw" or "delta".
func (p Protocol) String() string {
	if p == Delta {
		return "delta"
	}
	return "sotw"
}

// Transport says whether all types share one aggregated stream or each type
// has a stream on its own per-type service.
type Transport int

const (
	// ADS multiplexes every type on one AggregatedDiscoveryService stream.
	ADS Transport = iota
	// PerType opens one stream per resource type on that type's service.
	PerType
	// RESTPoll is REST-JSON polling: one HTTP POST per poll to
	// /v3/discovery:<type> (REST-5), SotW only and never aggregated.
	RESTPoll
)

// String returns "ads", "pertype" or "rest".
func (t Transport) String() string {
	switch t {
	case PerType:
		return "pertype"
	case RESTPoll:
		return "rest"
	}
	return "ads"
}

// Variant is one of the four gRPC variants of the protocol, or REST-JSON
// polling (REST).
type Variant struct {
	Protocol  Protocol
	Transport Transport
}

// The four gRPC variants, in the order reports list them.
var (
	SotWADS      = Variant{SotW, ADS}
	SotWPerType  = Variant{SotW, PerType}
	DeltaADS     = Variant{Delta, ADS}
	DeltaPerType = Variant{Delta, PerType}
)

// AllVariants lists the four gRPC variants.
var AllVariants = []Variant{SotWADS, SotWPerType, DeltaADS, DeltaPerType}

// REST is REST-JSON polling (the REST family of rules): state of the world
// over HTTP, one type per URL. It is not among AllVariants: it needs a
// transport of its own, so only the scenarios written for it run in it,
// and a server serves it only when it says so (a fixture's variants list
// "rest", or --rest-target names its endpoint).
var REST = Variant{SotW, RESTPoll}

// KnownVariants lists every variant, the gRPC ones and REST.
var KnownVariants = []Variant{SotWADS, SotWPerType, DeltaADS, DeltaPerType, REST}

// String returns the variant's stable name, e.g. "sotw-ads", or "rest";
// reports, IDs and --run patterns use it.
func (v Variant) String() string {
	if v.Transport == RESTPoll {
		return "rest"
	}
	return v.Protocol.String() + "-" + v.Transport.String()
}

// IsREST reports whether the variant is REST-JSON polling.
func (v Variant) IsREST() bool { return v.Transport == RESTPoll }

// IsDelta reports whether the variant speaks the incremental protocol.
func (v Variant) IsDelta() bool { return v.Protocol == Delta }

// IsADS reports whether the variant multiplexes types on one stream.
func (v Variant) IsADS() bool { return v.Transport == ADS }

// ParseVariant reads a variant name as printed by String.
func ParseVariant(s string) (Variant, error) {
	for _, v := range KnownVariants {
		if strings.EqualFold(s, v.String()) {
			return v, nil
		}
	}
	return Variant{}, fmt.Errorf("unknown variant %q (want one of sotw-ads, sotw-pertype, delta-ads, delta-pertype, rest)", s)
}

// Filter returns the variants of vs for which keep is true.
func Filter(vs []Variant, keep func(Variant) bool) []Variant {
	var out []Variant
	for _, v := range vs {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

// SotWOnly is every SotW variant.
var SotWOnly = []Variant{SotWADS, SotWPerType}

// VariantNames lists the names of variants ("sotw-ads", ...), as the
// fixture API's capabilities spell them.
func VariantNames(variants []Variant) []string {
	names := make([]string, 0, len(variants))
	for _, v := range variants {
		names = append(names, v.String())
	}
	return names
}

// DeltaOnly is every Delta variant.
var DeltaOnly = []Variant{DeltaADS, DeltaPerType}

// ADSOnly is every aggregated variant.
var ADSOnly = []Variant{SotWADS, DeltaADS}
