package fakeserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// In the rest variant each type's polls are a stream: Next is the next
// poll, Respond answers the one held; polls that overlap another of their
// type, or are not proto3 JSON, are marked and recorded as violations.
func TestRESTPolls(t *testing.T) {
	ctx := t.Context()
	srv, err := fakeserver.Start(fakeserver.Options{Variant: wire.REST, Timeout: 2 * time.Second, Quiet: 100 * time.Millisecond, Transcript: transcript.New()})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	rc := fakeclient.NewREST("http://"+srv.Addr(), fakeclient.RESTOptions{})

	type out struct {
		p   *fakeclient.Poll
		err error
	}
	post := func(version string) <-chan out {
		ch := make(chan out, 1)
		go func() {
			p, err := rc.Post(ctx, wire.Cluster, &discovery.DiscoveryRequest{VersionInfo: version})
			ch <- out{p, err}
		}()
		return ch
	}
	first := post("")
	st, err := srv.StreamFor(ctx, wire.Cluster, 0)
	require.NoError(t, err)
	assert.True(t, st.REST)
	r, err := st.Next(ctx, wire.Cluster)
	require.NoError(t, err)
	require.NotNil(t, r.REST)
	assert.NoError(t, r.REST.DecodeErr)
	assert.Zero(t, r.REST.Concurrent)
	_, err = st.Respond(ctx, wire.Cluster, "1", wire.ClientDNSCluster("c", 1))
	require.NoError(t, err)
	got := <-first
	require.NoError(t, got.err)
	assert.Equal(t, "1", got.p.Response.GetVersionInfo())

	// A poll held, and a second one beside it: REST-1.
	held := post("1")
	_, err = st.Next(ctx, wire.Cluster)
	require.NoError(t, err)
	second := post("1")
	r, err = st.Next(ctx, wire.Cluster)
	require.NoError(t, err)
	assert.Equal(t, 1, r.REST.Concurrent)
	assert.Equal(t, 1, r.Answered)

	// Not proto3 JSON: REST-3, answered 400.
	p, err := rc.PostRaw(ctx, "/v3/discovery:clusters", []byte(`{"VersionInfo":"1"}`))
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, p.Status)
	r, err = st.Next(ctx, wire.Cluster)
	require.NoError(t, err)
	assert.Error(t, r.REST.DecodeErr)

	var rules []string
	for _, v := range srv.Violations() {
		rules = append(rules, v.Rule)
	}
	assert.Contains(t, rules, "REST-1")
	assert.Contains(t, rules, "REST-3")
	assert.True(t, strings.HasPrefix(st.Name, "CDS-rest#"), st.Name)

	srv.Close() // held polls end
	for _, ch := range []<-chan out{held, second} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("a held poll outlived the server")
		}
	}
	_, err = st.Next(context.Background(), wire.Cluster)
	assert.Error(t, err, "the stream ends with the server")
}
