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
)

// String returns "ads" or "pertype".
func (t Transport) String() string {
	if t == PerType {
		return "pertype"
	}
	return "ads"
}

// Variant is one of the four gRPC variants of the protocol.
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

// String returns the variant's stable name, e.g. "sotw-ads"; reports, IDs
// and --run patterns use it.
func (v Variant) String() string { return v.Protocol.String() + "-" + v.Transport.String() }

// IsDelta reports whether the variant speaks the incremental protocol.
func (v Variant) IsDelta() bool { return v.Protocol == Delta }

// IsADS reports whether the variant multiplexes types on one stream.
func (v Variant) IsADS() bool { return v.Transport == ADS }

// ParseVariant reads a variant name as printed by String.
func ParseVariant(s string) (Variant, error) {
	for _, v := range AllVariants {
		if strings.EqualFold(s, v.String()) {
			return v, nil
		}
	}
	return Variant{}, fmt.Errorf("unknown variant %q (want one of sotw-ads, sotw-pertype, delta-ads, delta-pertype)", s)
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
