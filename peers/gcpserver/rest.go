package gcpserver

import (
	"errors"
	"io"
	"net/http"
	"path"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xdsconform/xdsconform/wire"
)

// variants are the variants a flavour serves: the four gRPC ones, and
// REST-JSON polling for the Snapshot flavour, whose SnapshotCache
// implements Fetch (simple.go:639-660); the LinearCache does not.
func variants(flavour Flavour) []wire.Variant {
	if flavour == Snapshot {
		return wire.KnownVariants
	}
	return wire.AllVariants
}

// RESTHold is 0: go-control-plane holds no poll, it answers one at the
// current version at once with 304 Not Modified (targets.RESTHolder).
func (s *Server) RESTHold() time.Duration { return 0 }

// RESTHandler serves go-control-plane's REST-JSON polling for the
// Snapshot flavour, nil for the Linear one. It is go-control-plane's own
// HTTPGateway.ServeHTTP (pkg/server/v3/gateway.go, v0.14.0) line for line
// over its rest.Server, as an http.Handler: the gateway itself lives in
// pkg/server/v3, which this package stays out of (see handlers). Its
// behaviour is go-control-plane's: a poll at the current version is
// answered 304 Not Modified at once (SkipFetchError), replies are written
// with the original proto field names (UseProtoNames).
func (s *Server) RESTHandler() http.Handler {
	if s.rest == nil {
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, code, err := s.gateway(req)
		if err != nil {
			http.Error(w, err.Error(), code)
			return
		}
		if body != nil {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(code)
		_, _ = w.Write(body)
	})
}

// gateway is HTTPGateway.ServeHTTP of gateway.go.
func (s *Server) gateway(req *http.Request) ([]byte, int, error) {
	t, ok := wire.TypeByRESTPath(path.Clean(req.URL.Path))
	if !ok {
		return nil, http.StatusNotFound, errors.New("no endpoint")
	}
	if req.Body == nil {
		return nil, http.StatusBadRequest, errors.New("empty body")
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxRESTBody))
	if err != nil {
		return nil, http.StatusBadRequest, errors.New("cannot read body")
	}
	out := &discovery.DiscoveryRequest{}
	if err := protojson.Unmarshal(body, out); err != nil {
		return nil, http.StatusBadRequest, errors.New("cannot parse JSON body: " + err.Error())
	}
	out.TypeUrl = t.URL
	res, err := s.rest.Fetch(req.Context(), out)
	if err != nil {
		var skip *types.SkipFetchError
		if errors.As(err, &skip) {
			return nil, http.StatusNotModified, nil
		}
		return nil, http.StatusInternalServerError, errors.New("fetch error: " + err.Error())
	}
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(res)
	if err != nil {
		return nil, http.StatusInternalServerError, errors.New("marshal error: " + err.Error())
	}
	return b, http.StatusOK, nil
}

// maxRESTBody bounds a poll's body; the gateway reads it whole.
const maxRESTBody = 4 << 20
