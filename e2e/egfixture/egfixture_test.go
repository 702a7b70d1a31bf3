package egfixture

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// objectsIn reads a node's file back: kind/name → object.
func objectsIn(t *testing.T, dir, node string) map[string]map[string]any {
	t.Helper()
	fh, err := os.Open(filepath.Join(dir, node+".yaml"))
	require.NoError(t, err)
	defer fh.Close()
	out := map[string]map[string]any{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if sc.Text() == "---" {
			continue
		}
		var o map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &o))
		out[o["kind"].(string)+"/"+o["metadata"].(map[string]any)["name"].(string)] = o
	}
	require.NoError(t, sc.Err())
	return out
}

func listenersOf(gw map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, l := range gw["spec"].(map[string]any)["listeners"].([]any) {
		l := l.(map[string]any)
		out[l["name"].(string)] = l
	}
	return out
}

func newFixture(t *testing.T) (*Fixture, string) {
	dir, stage := t.TempDir(), t.TempDir()
	f, err := New(dir, stage, "v1.9.1")
	require.NoError(t, err)
	return f, dir
}

func set(t *testing.T, f *Fixture, node string, ty wire.Type, name string, rev int) *fixturepb.SetResourceResponse {
	t.Helper()
	resp, err := f.SetResource(t.Context(), &fixturepb.SetResourceRequest{NodeId: node, TypeUrl: ty.URL, Name: name, Resource: wire.BuildAny(ty, name, rev)})
	require.NoError(t, err)
	return resp
}

func TestSetResource_ServedNamesAndRevisions(t *testing.T) {
	for _, tc := range []struct {
		ty            wire.Type
		wantName      string
		wantPath      string
		first, second string // the revision field of revisions 1 and 2
		wantObjs      []string
		// inFile reads, from the node's objects, the value the revision
		// field will have once Envoy Gateway translates them.
		inFile func(objs map[string]map[string]any) string
	}{
		{wire.Listener, Namespace + "/n1/l-a", "address.socket_address.port_value",
			"20000", "20001", []string{"Gateway/n1"},
			func(objs map[string]map[string]any) string {
				return num(listenersOf(objs["Gateway/n1"])["l-a"]["port"])
			}},
		{wire.Route, Namespace + "/n1/r-a", "virtual_hosts.0.domains.0",
			"r1.xdsconform.test", "r2.xdsconform.test", []string{"Gateway/n1", "HTTPRoute/n1.r-a"},
			func(objs map[string]map[string]any) string {
				return objs["HTTPRoute/n1.r-a"]["spec"].(map[string]any)["hostnames"].([]any)[0].(string)
			}},
		{wire.Cluster, "httproute/" + Namespace + "/n1.c-a/rule/0", "connect_timeout",
			"1.001s", "1.002s",
			[]string{"Gateway/n1", "HTTPRoute/n1.c-a", "Backend/n1.c-a", "BackendTrafficPolicy/n1.c-a"},
			func(objs map[string]map[string]any) string {
				timeout := objs["BackendTrafficPolicy/n1.c-a"]["spec"].(map[string]any)["timeout"].(map[string]any)["tcp"].(map[string]any)["connectTimeout"].(string)
				d, err := time.ParseDuration(timeout)
				require.NoError(t, err)
				return d.String()
			}},
		{wire.Endpoint, "httproute/" + Namespace + "/n1.e-a/rule/0", "endpoints.0.lb_endpoints.0.endpoint.address.socket_address.port_value",
			"20001", "20002", []string{"Gateway/n1", "HTTPRoute/n1.e-a", "Backend/n1.e-a"},
			func(objs map[string]map[string]any) string {
				return num(objs["Backend/n1.e-a"]["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)["ip"].(map[string]any)["port"])
			}},
	} {
		t.Run(tc.ty.Short, func(t *testing.T) {
			f, dir := newFixture(t)
			_, err := f.Reset(t.Context(), &fixturepb.ResetRequest{NodeId: "n1"})
			require.NoError(t, err)
			first := set(t, f, "n1", tc.ty, "a", 1)
			assert.Equal(t, tc.wantName, first.GetName())
			require.Len(t, first.GetRevision(), 1)
			assert.Equal(t, tc.wantPath, first.GetRevision()[0].GetPath())
			assert.Equal(t, tc.first, first.GetRevision()[0].GetValue())
			objs := objectsIn(t, dir, "n1")
			assert.ElementsMatch(t, tc.wantObjs, keys(objs))

			assert.Equal(t, tc.first, tc.inFile(objs), "the file gives Envoy Gateway the revision's value")

			second := set(t, f, "n1", tc.ty, "a", 2)
			assert.Equal(t, tc.wantName, second.GetName(), "a new revision keeps the name")
			assert.Equal(t, tc.second, second.GetRevision()[0].GetValue(), "and changes the revision field")
			assert.Equal(t, tc.second, tc.inFile(objectsIn(t, dir, "n1")), "and the file with it")

			_, err = f.DeleteResource(t.Context(), &fixturepb.DeleteResourceRequest{NodeId: "n1", TypeUrl: tc.ty.URL, Name: second.GetName()})
			require.NoError(t, err)
			assert.Equal(t, []string{"Gateway/n1"}, keys(objectsIn(t, dir, "n1")), "deleting leaves the gateway alone")
			assert.Equal(t, []string{"base"}, keys(listenersOf(objectsIn(t, dir, "n1")["Gateway/n1"])))
		})
	}
}

func TestSetResource_GatewayListeners(t *testing.T) {
	f, dir := newFixture(t)
	set(t, f, "n1", wire.Listener, "a", 1)
	set(t, f, "n1", wire.Route, "b", 1)
	set(t, f, "n1", wire.Endpoint, "c", 1)
	set(t, f, "n2", wire.Listener, "a", 1)
	ls := listenersOf(objectsIn(t, dir, "n1")["Gateway/n1"])
	assert.ElementsMatch(t, []string{"l-a", "r-b", "http"}, keys(ls), "no base listener once there are others")
	for name, l := range ls {
		assert.Equal(t, "HTTP", l["protocol"], "%s: a TCP listener without routes brings a cluster", name)
	}
	ports := map[float64]string{}
	for name, l := range ls {
		p := l["port"].(float64)
		assert.Empty(t, ports[p], "%s and %s share port %v: Envoy Gateway would merge them", name, ports[p], p)
		ports[p] = name
	}
	route := objectsIn(t, dir, "n1")["HTTPRoute/n1.r-b"]["spec"].(map[string]any)
	assert.Equal(t, []any{map[string]any{"name": "n1", "sectionName": "r-b"}}, route["parentRefs"], "attached to its own listener only")
	assert.NotContains(t, route["rules"].([]any)[0], "backendRefs", "a route configuration brings no cluster")
	assert.Contains(t, keys(objectsIn(t, dir, "n2")), "Gateway/n2", "each node is its own gateway")
	assert.NotContains(t, keys(objectsIn(t, dir, "n2")), "HTTPRoute/n1.r-b")
}

func TestSetResource_Names(t *testing.T) {
	f, _ := newFixture(t)
	served := map[string]string{}
	for _, name := range []string{"svc.example.com:443", "A", "a/b", "a"} {
		resp := set(t, f, "n1", wire.Listener, name, 1)
		assert.Regexp(t, `^`+Namespace+`/n1/l-[a-z0-9-]+$`, resp.GetName(), "any requested name is served under a DNS label")
		assert.NotContains(t, served, resp.GetName(), "%q is served under the name of %q", name, served[resp.GetName()])
		served[resp.GetName()] = name
	}
	assert.Equal(t, "a", served[Namespace+"/n1/l-a"], "a DNS label is kept as it is")
	_, err := f.SetResource(t.Context(), &fixturepb.SetResourceRequest{NodeId: "N_1", TypeUrl: wire.Cluster.URL, Name: "a", Resource: wire.BuildAny(wire.Cluster, "a", 1)})
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "a node id must name its gateway")
}

// TestReset_StartAndEndOfAPair: the first Reset of a node gives it an empty
// gateway, the next removes the gateway's file, so the folder only holds
// the pairs that run.
func TestReset_StartAndEndOfAPair(t *testing.T) {
	f, dir := newFixture(t)
	reset := func() {
		_, err := f.Reset(t.Context(), &fixturepb.ResetRequest{NodeId: "n1"})
		require.NoError(t, err)
	}
	reset()
	assert.Equal(t, []string{"Gateway/n1"}, keys(objectsIn(t, dir, "n1")), "a pair starts: an empty gateway")
	set(t, f, "n1", wire.Cluster, "a", 1)
	reset()
	assert.NoFileExists(t, filepath.Join(dir, "n1.yaml"), "a pair ends: its gateway goes")
	set(t, f, "n1", wire.Cluster, "a", 1)
	assert.Contains(t, keys(objectsIn(t, dir, "n1")), "HTTPRoute/n1.c-a", "a Set brings the gateway back")
}

func TestNew_WritesTheClassAndStagesNothingBehind(t *testing.T) {
	dir, stage := t.TempDir(), t.TempDir()
	f, err := New(dir, stage, "v")
	require.NoError(t, err)
	set(t, f, "n1", wire.Cluster, "a", 1)
	assert.Contains(t, keys(objectsIn(t, dir, "gatewayclass")), "GatewayClass/"+GatewayClass)
	left, err := os.ReadDir(stage)
	require.NoError(t, err)
	assert.Empty(t, left, "files are moved, not copied, into the watched folder")
}

func keys[V any](m map[string]V) []string { return sorted(m) }

// num renders a JSON number read back from a file as the harness would.
func num(v any) string { return strconv.FormatFloat(v.(float64), 'f', -1, 64) }

func TestDeleteResource_UnknownNodeWritesNothing(t *testing.T) {
	f, dir := newFixture(t)
	_, err := f.DeleteResource(t.Context(), &fixturepb.DeleteResourceRequest{NodeId: "n9", TypeUrl: wire.Cluster.URL, Name: "x"})
	require.NoError(t, err)
	assert.NoFileExists(t, filepath.Join(dir, "n9.yaml"))
	_, err = f.DeleteResource(t.Context(), &fixturepb.DeleteResourceRequest{NodeId: "../n9", TypeUrl: wire.Cluster.URL, Name: "x"})
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "a node id is never a path")
	_, err = f.SetResource(t.Context(), &fixturepb.SetResourceRequest{NodeId: "n9", TypeUrl: wire.Cluster.URL, Name: "c",
		Resource: must(anypb.New(&cluster.Cluster{Name: "c", ConnectTimeout: durationpb.New(1500 * time.Microsecond)}))})
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "no whole milliseconds")
	assert.NoFileExists(t, filepath.Join(dir, "n9.yaml"), "a refused Set changes nothing")
}

func must(a *anypb.Any, err error) *anypb.Any {
	if err != nil {
		panic(err)
	}
	return a
}
