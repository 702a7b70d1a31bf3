package record

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/xdsconform/xdsconform/transcript"
)

// hopByHop are the headers that belong to one HTTP/2 hop or that gRPC
// sets itself on each call (content type, timeout, encoding, status):
// the proxy's own call sets them again, so they are not forwarded. The
// deadline travels as the call's context instead of grpc-timeout.
var hopByHop = []string{
	"content-type", "user-agent", "te", "host", "connection", "keep-alive",
	"proxy-connection", "transfer-encoding", "upgrade", "http2-settings",
}

// forwardable is md without pseudo-headers, gRPC's reserved grpc-*
// headers and hop-by-hop headers: the metadata an application put on the
// call, which the other side must get as it was.
func forwardable(md metadata.MD) metadata.MD {
	out := metadata.MD{}
	for k, vs := range md {
		k = strings.ToLower(k)
		if k == "" || k[0] == ':' || strings.HasPrefix(k, "grpc-") || slices.Contains(hopByHop, k) {
			continue
		}
		out[k] = slices.Clone(vs)
	}
	return out
}

// maxShownValue bounds one metadata value quoted in an event note.
const maxShownValue = 256

// describe renders md for an event note: keys in order, a sensitive
// header's value as the redaction placeholder (and remembered, so that a
// peer echoing it cannot put it in the file either), binary values by
// their size. user-agent is shown although it is not forwarded: it says
// which client spoke.
func describe(md metadata.MD) string {
	keys := make([]string, 0, len(md))
	for k := range md {
		k = strings.ToLower(k)
		if k == "" || k[0] == ':' || strings.HasPrefix(k, "grpc-") || k != "user-agent" && slices.Contains(hopByHop, k) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		for _, v := range md.Get(k) {
			switch {
			case transcript.IsSensitiveHeaderValue(k, v):
				transcript.RememberSecret(v)
				v = transcript.RedactedSecret
			case strings.HasSuffix(k, "-bin"):
				v = fmt.Sprintf("(%d bytes)", len(v))
			default:
				v = transcript.Clip(v, maxShownValue)
			}
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, ", ")
}
