package observer

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	status "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigDumpEndlessBody: an admin endpoint that never stops sending
// costs StatusViewBytes and a clear error, and holds nothing afterwards.
func TestConfigDumpEndlessBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte(" "), 64<<10)
		_, _ = w.Write([]byte(`{"configs": [`))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	o := NewConfigDump(strings.TrimPrefix(srv.URL, "http://"))
	t.Cleanup(func() { _ = o.Close() })
	_, err := o.Observe(t.Context())
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "over 8388608 bytes")
	assert.Zero(t, reading.Load(), "a read gives back what it held")
}

// TestConfigDumpLargeButBounded: a dump under the bound is read whole.
func TestConfigDumpLargeButBounded(t *testing.T) {
	body := `{"configs": [{"@type": "` + clustersDumpURL + `", "dynamic_active_clusters": [{"version_info": "1", "cluster": {"name": "c"}}]}]` +
		strings.Repeat(" ", StatusViewBytes-200) + `}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }))
	t.Cleanup(srv.Close)
	o := NewConfigDump(strings.TrimPrefix(srv.URL, "http://"))
	t.Cleanup(func() { _ = o.Close() })
	rs, err := o.Observe(t.Context())
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, "c", rs[0].Name)
	assert.Zero(t, reading.Load())
}

// waitingFor sets beforeWait for one test: it returns a channel that
// receives the tier of every read about to wait for room.
func waitingFor(t *testing.T) <-chan string {
	waits := make(chan string, 16)
	beforeWait = func(tier string) { waits <- tier }
	t.Cleanup(func() { beforeWait = nil })
	return waits
}

// TestReadWaitsForRoom: a read that finds every small reservation taken
// waits for one instead of failing, and succeeds once room frees, so its
// outcome does not depend on what ran alongside it.
func TestReadWaitsForRoom(t *testing.T) {
	waits := waitingFor(t)
	require.NoError(t, small.Acquire(t.Context(), readingSmall))
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := readBounded(t.Context(), strings.NewReader(strings.Repeat("x", 1000)), StatusViewBytes)
		done <- result{b, err}
	}()
	require.Equal(t, "small", <-waits)
	small.Release(readingSmall)
	r := <-done
	require.NoError(t, r.err)
	assert.Len(t, r.b, 1000)
	assert.Zero(t, reading.Load(), "a read gives back what it held")
}

// TestLargeReadsTakeTurns: a body over smallReadBytes waits for a large
// turn while every turn is taken, and then is read whole.
func TestLargeReadsTakeTurns(t *testing.T) {
	waits := waitingFor(t)
	require.NoError(t, large.Acquire(t.Context(), largeReads))
	done := make(chan error, 1)
	var got []byte
	go func() {
		var err error
		got, err = readBounded(t.Context(), strings.NewReader(strings.Repeat("y", 3*smallReadBytes)), StatusViewBytes)
		done <- err
	}()
	require.Equal(t, "large", <-waits)
	large.Release(largeReads)
	require.NoError(t, <-done)
	assert.Len(t, got, 3*smallReadBytes)
	assert.Zero(t, reading.Load())
	require.True(t, large.TryAcquire(largeReads), "the turn was given back")
	large.Release(largeReads)
	require.True(t, small.TryAcquire(readingSmall), "and the small reservation")
	small.Release(readingSmall)
}

// TestReadWaitBoundedByContext: a read waiting for room ends with its
// context, saying what it waited for, and holds nothing.
func TestReadWaitBoundedByContext(t *testing.T) {
	waits := waitingFor(t)
	require.NoError(t, small.Acquire(t.Context(), readingSmall))
	defer small.Release(readingSmall)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := readBounded(ctx, strings.NewReader("z"), StatusViewBytes)
		done <- err
	}()
	<-waits
	cancel()
	err := <-done
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "waiting for room to read a status view")
	assert.Zero(t, reading.Load())
}

// TestCSDSReadsTakeTurns: reads of one CSDS observer run one at a time,
// so a pair's checks polling its client's status view together hold one
// response in flight, not one each; the wait for a turn is bounded by
// the read's context.
func TestCSDSReadsTakeTurns(t *testing.T) {
	c, err := DialCSDS("127.0.0.1:1")
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	c.turn <- struct{}{} // a read in flight
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.Observe(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "waiting for another read of the status view")
	<-c.turn
	ctx, cancel = context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = c.Observe(ctx)
	require.Error(t, err, "nothing listens there")
	assert.NotContains(t, err.Error(), "waiting for another read", "the turn is free again")
	assert.Empty(t, c.turn, "a read gives its turn back")
}

// TestConfigDumpMaxBytes: a dump over the default cap is refused with
// ErrTooLarge, naming the cap; with the cap raised (MaxBytes) the same
// dump is read, and the read still gives back what it held.
func TestConfigDumpMaxBytes(t *testing.T) {
	body := `{"configs": [{"@type": "` + clustersDumpURL + `", "dynamic_active_clusters": [{"version_info": "1", "cluster": {"name": "c"}}]}]}` +
		strings.Repeat(" ", StatusViewBytes)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")

	o := NewConfigDump(addr)
	t.Cleanup(func() { _ = o.Close() })
	_, err := o.Observe(t.Context())
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), fmt.Sprintf("over %d bytes", StatusViewBytes))

	raised := NewConfigDump(addr, MaxBytes(2*StatusViewBytes))
	t.Cleanup(func() { _ = raised.Close() })
	rs, err := raised.Observe(t.Context())
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, "c", rs[0].Name)
	assert.Zero(t, reading.Load())
}

// TestCSDSMaxBytes: a CSDS response over the observer's cap is refused by
// the harness's own receive limit, reported as ErrTooLarge naming the
// cap, on the unary method and the streaming one alike; under a cap
// raised past it, it is read.
func TestCSDSMaxBytes(t *testing.T) {
	const capBytes = 1 << 20
	resp := sampleStatus(t)
	resp.Config[0].GenericXdsConfigs[0].ErrorState = &admin.UpdateFailureState{Details: strings.Repeat("d", 2*capBytes)}
	for name, impl := range map[string]status.ClientStatusDiscoveryServiceServer{
		"fetch": &fullCSDS{resp: resp}, "stream-only": &streamOnlyCSDS{resp: resp},
	} {
		t.Run(name, func(t *testing.T) {
			addr := serveCSDS(t, impl)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			o, err := DialCSDS(addr, MaxBytes(capBytes))
			require.NoError(t, err)
			t.Cleanup(func() { _ = o.Close() })
			_, err = o.Observe(ctx)
			require.ErrorIs(t, err, ErrTooLarge)
			assert.Contains(t, err.Error(), fmt.Sprintf("over %d bytes", capBytes))

			raised, err := DialCSDS(addr, MaxBytes(4*capBytes))
			require.NoError(t, err)
			t.Cleanup(func() { _ = raised.Close() })
			rs, err := raised.Observe(ctx)
			require.NoError(t, err)
			assert.NotEmpty(t, rs)
		})
	}
}
