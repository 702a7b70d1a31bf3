package fakeclient

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/wire"
)

// RecvLimitExceeded reports whether err, from a Client, says a stream
// ended because grpc-go refused, on the harness's side, a message larger
// than the receive limit the harness set (--max-recv-size). The stream
// then ends with ResourceExhausted as if the target had closed it, but the
// harness closed it: xDS sets no limit, so the target broke no rule.
//
// A target that refused a message the harness sent ends the stream with
// the same code and words; that is the target's refusal (TargetRefused),
// never this. An error that did not come from a Client's stream (no
// ClosedError) cannot be told apart, so it is never charged to the
// harness here.
func RecvLimitExceeded(err error) bool {
	var closed *ClosedError
	return errors.As(err, &closed) && closed.Refusal != nil && closed.Refusal.Ours
}

// TargetRefused returns, when err from a Client says a stream ended
// because the target refused a message the harness sent for its size,
// what the target said of it.
func TargetRefused(err error) (wire.SizeRefusal, bool) {
	var closed *ClosedError
	if errors.As(err, &closed) && closed.Refusal != nil && !closed.Refusal.Ours {
		return *closed.Refusal, true
	}
	return wire.SizeRefusal{}, false
}

// RecvLimitNote says, for a report, that err is the harness's receive
// limit at work and how to raise it.
func RecvLimitNote(err error) string {
	// The status's own words, not a wrapping that already says this.
	var closed *ClosedError
	if errors.As(err, &closed) {
		err = closed.Err
	}
	return "the target sent a message over the harness's receive limit (" + status.Convert(err).Message() +
		"); xDS sets no limit: raise the harness's with --max-recv-size"
}

// RefusedNote says, for a report, that the target refused a message the
// harness sent for its size: the limit is a setting of the target's, and
// only the target's side can raise it.
func RefusedNote(r wire.SizeRefusal) string {
	return refusedBy(r) + "; that limit is a setting of the target's (a gRPC server's maximum receive message size: " +
		"grpc.MaxRecvMsgSize in grpc-go, maxInboundMessageSize in grpc-java, 4 MiB unless set), not the harness's: " +
		"xDS sets no limit, so raise the target's to run this scenario"
}

// refusedBy says what the target refused, with the sizes its status gave.
func refusedBy(r wire.SizeRefusal) string {
	msg := "the target refused a message the harness sent, as too large for it"
	if r.Size > 0 {
		msg = fmt.Sprintf("the target refused a message of %d bytes the harness sent", r.Size)
		if r.Limit > 0 {
			msg += fmt.Sprintf(", over its own receive limit of %d bytes", r.Limit)
		}
	}
	return msg
}
