package fakeclient

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// RecvLimitExceeded reports whether err is grpc-go refusing, on the
// harness's side, a message larger than the receive limit the harness set
// (--max-recv-size). The stream then ends with ResourceExhausted as if the
// target had closed it, but the harness closed it: xDS sets no limit, so
// the target broke no rule.
func RecvLimitExceeded(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "larger than max")
}

// RecvLimitNote says, for a report, that err is the harness's receive
// limit at work and how to raise it.
func RecvLimitNote(err error) string {
	return "the target sent a message over the harness's receive limit (" + status.Convert(err).Message() +
		"); xDS sets no limit: raise the harness's with --max-recv-size"
}
