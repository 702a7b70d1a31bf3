package targets

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// crashGuard makes a panic in an in-process target's handler what a panic
// in a server of its own process is: the target dies, every stream and
// connection ends, and the harness charges the death to the pair that
// last sent it a scenario message (docs/state-space.md). Without it the
// panic would end the harness's own process, with no report at all.
// Goroutines the target starts itself are out of its reach.
type crashGuard struct {
	once  sync.Once
	stop  func()            // stops the target's gRPC server
	died  func(cause error) // records the death
	cause error
}

func (c *crashGuard) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if v := recover(); v != nil {
			resp, err = nil, c.crashed(v)
		}
	}()
	return h(ctx, req)
}

func (c *crashGuard) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = c.crashed(v)
		}
	}()
	return h(srv, ss)
}

// crashed records the first panic, stops the target as its process would
// have stopped, and ends the panicking call as a dropped connection ends.
func (c *crashGuard) crashed(v any) error {
	site := panicSite()
	c.once.Do(func() {
		c.cause = fmt.Errorf("the in-process target panicked: %v%s", v, site)
		if c.died != nil {
			c.died(c.cause)
		}
		// Not in this goroutine: Stop waits for the handlers, this one
		// among them.
		go c.stop()
	})
	return status.Error(codes.Unavailable, c.cause.Error())
}

// panicSite is where the panic happened: the first frame below the
// runtime's own and this file's, as " at file.go:line".
func panicSite() string {
	pc := make([]uintptr, 32)
	frames := runtime.CallersFrames(pc[:runtime.Callers(3, pc)])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") && !strings.HasSuffix(f.File, "crashguard.go") {
			file := f.File
			if i := strings.LastIndexByte(file, '/'); i >= 0 {
				file = file[i+1:]
			}
			return fmt.Sprintf(" at %s:%d (%s)", file, f.Line, f.Function)
		}
		if !more {
			return ""
		}
	}
}
