package observer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigDumpObserve(t *testing.T) {
	sample, err := os.ReadFile("testdata/config_dump.json")
	require.NoError(t, err)
	var gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/config_dump" {
			http.NotFound(w, r)
			return
		}
		gotQuery = r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(sample)
	}))
	defer srv.Close()

	o := NewConfigDump(strings.TrimPrefix(srv.URL, "http://"))
	defer o.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := o.Observe(ctx)
	require.NoError(t, err)
	assert.Equal(t, "include_eds", gotQuery)

	const (
		lds = "type.googleapis.com/envoy.config.listener.v3.Listener"
		rds = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
		cds = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
		eds = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
		sds = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
	)
	want := []Resource{
		{TypeURL: cds, Name: "backend", Version: "3", State: Acked},
		{TypeURL: cds, Name: "updating", Version: "2", State: Acked},
		{TypeURL: cds, Name: "rejected", Version: "2", State: Nacked, Error: "Proto constraint validation failed", ErrorVersion: "3"},
		{TypeURL: cds, Name: "warming", Version: "3", State: Requested},
		{TypeURL: lds, Name: "ingress", Version: "5", State: Acked},
		{TypeURL: lds, Name: "broken", Version: "4", State: Nacked,
			Error: "Error adding/updating listener(s) broken: no filter chains specified", ErrorVersion: "5"},
		{TypeURL: lds, Name: "warm", Version: "5", State: Requested},
		{TypeURL: lds, Name: "missing", State: DoesNotExist},
		{TypeURL: lds, Name: "pending", State: Requested},
		{TypeURL: rds, Name: "routes", Version: "7", State: Acked},
		{TypeURL: eds, Name: "backend", Version: "8", State: Acked},
		{TypeURL: sds, Name: "cert", Version: "9", State: Acked},
	}
	assert.Equal(t, want, rs)
}

func TestConfigDumpErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		handler http.HandlerFunc
		want    string
	}{
		"truncated JSON": {func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"configs": [`)) }, "parse"},
		"HTTP error": {func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "admin is sulking", http.StatusServiceUnavailable)
		}, "503"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			o := NewConfigDump(strings.TrimPrefix(srv.URL, "http://"))
			defer o.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := o.Observe(ctx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseConfigDumpClientStatusWins(t *testing.T) {
	rs, err := ParseConfigDump([]byte(`{"configs":[{"@type":"type.googleapis.com/envoy.admin.v3.RoutesConfigDump",
		"dynamic_route_configs":[{"version_info":"1","route_config":{"name":"r"},"client_status":"DOES_NOT_EXIST"},
		{"version_info":"1","route_config":{"name":"u"},"client_status":"UNKNOWN"}]}]}`))
	require.NoError(t, err)
	require.Len(t, rs, 2)
	assert.Equal(t, DoesNotExist, rs[0].State)
	assert.Equal(t, Acked, rs[1].State, "UNKNOWN means unset")
}
