package refserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xdsconform/xdsconform/wire"
)

// The REST-JSON transport (the REST variant). A poll is a POST of a
// DiscoveryRequest, as proto3 JSON, to the type's /v3/discovery:<type>
// path (REST-5); the reply is the state of the world of the names it asks
// for (every resource of a wildcard type when it names none), as canonical
// proto3 JSON (REST-3). A poll that carries the current version is held
// until the type changes (REST-4), or ended after its hold with 304 Not
// Modified and no body: how an idle long poll ends is not specified, and
// no DiscoveryResponse is sent without a change. REST has no stream, so
// no nonce is needed (REST-2); the server sends one anyway, as the
// gRPC transports do.

// DefaultRESTHold is how long the reference server holds a poll that
// carries the current version before ending it with 304 Not Modified,
// unless WithRESTHold sets another.
const DefaultRESTHold = 30 * time.Second

// restEarlyAnswer is when FaultRESTAnswersHeldPollEarly answers a held
// poll: well inside a real server's hold, but after the 1.5 s window the
// long-poll check once watched, which such a server therefore passed.
// Against a hold shorter than this it answers at seven eighths of the
// hold, still before the hold ends.
const restEarlyAnswer = 1750 * time.Millisecond

// maxRESTBody bounds the bytes read of one poll.
const maxRESTBody = 4 << 20

// RESTHandler returns the REST-JSON endpoints of every type that has one.
func (s *Server) RESTHandler() http.Handler {
	return http.HandlerFunc(s.serveREST)
}

func (s *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	if s.has(FaultRESTBadPollEmptyOK) {
		w = &badPollAsOK{ResponseWriter: w} // breaks REST-3: a poll refused is answered 200, empty
	}
	t, ok := wire.TypeByRESTPath(r.URL.Path)
	if ok && t.URL == wire.Route.URL && s.has(FaultRESTNoRoutesPath) {
		ok = false // breaks REST-5: a path of the proto's annotations is not served
	}
	if !ok {
		http.Error(w, "no REST endpoint at "+r.URL.Path, http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "REST polls are POSTs", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRESTBody+1))
	if err != nil || len(body) > maxRESTBody {
		http.Error(w, "unreadable or oversized body", http.StatusBadRequest)
		return
	}
	if s.has(FaultRESTProtoNamesRejected) && bytes.Contains(body, []byte(`"version_info"`)) || s.has(FaultRESTProtoNamesRejected) && bytes.Contains(body, []byte(`"resource_names"`)) {
		// Breaks REST-3: canonical parsers accept the original field names too.
		http.Error(w, "unknown field", http.StatusBadRequest)
		return
	}
	req := &discovery.DiscoveryRequest{}
	if err := protojson.Unmarshal(body, req); err != nil {
		http.Error(w, "not a DiscoveryRequest in proto3 JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	if req.GetTypeUrl() == "" && s.has(FaultRESTTypeURLRequired) {
		http.Error(w, "no type_url", http.StatusBadRequest) // breaks REST-5: the path implies it
		return
	}
	if u := req.GetTypeUrl(); u != "" && u != t.URL {
		http.Error(w, fmt.Sprintf("type_url %q on the %s endpoint", u, t.Short), http.StatusBadRequest)
		return
	}
	resp, err := s.poll(r.Context(), t, req)
	if errors.Is(err, errNotModified) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if err != nil {
		return // the client went away
	}
	out, err := s.restJSON(resp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// errNotModified ends a held poll that saw no change.
var errNotModified = errors.New("not modified")

// poll answers one REST poll: at once when the client's version is not
// the current one, else when the type changes (REST-4).
func (s *Server) poll(ctx context.Context, t wire.Type, req *discovery.DiscoveryRequest) (*discovery.DiscoveryResponse, error) {
	node := req.GetNode().GetId()
	wake := make(chan struct{}, 1)
	// Watch before reading, so a change between the read and the wait
	// still wakes the poll.
	s.watch(node, wake)
	defer s.unwatch(node, wake)
	hold := time.NewTimer(s.restHold)
	defer hold.Stop()
	// early fires only with FaultRESTAnswersHeldPollEarly: the poll is then
	// answered, unchanged, before its hold ends (breaks REST-4).
	var early <-chan time.Time
	if s.has(FaultRESTAnswersHeldPollEarly) {
		t := time.NewTimer(min(restEarlyAnswer, s.restHold*7/8))
		defer t.Stop()
		early = t.C
	}
	for {
		snap := s.snapshot(node, t.URL)
		current := req.GetVersionInfo() != "" && req.GetVersionInfo() == snap.version
		if !current || s.has(FaultRESTNoLongPoll) { // the fault breaks REST-4
			return s.restResponse(t, snap, req.GetResourceNames()), nil
		}
		select {
		case <-wake:
		case <-early:
			return s.restResponse(t, snap, req.GetResourceNames()), nil
		case <-hold.C:
			return nil, errNotModified
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// restResponse is the state of the world of the names asked for: every
// resource of a wildcard type when none is named, as on SotW streams.
func (s *Server) restResponse(t wire.Type, snap snapshot, names []string) *discovery.DiscoveryResponse {
	resp := &discovery.DiscoveryResponse{VersionInfo: snap.version, TypeUrl: t.URL, Nonce: snap.version}
	wildcard := t.Wildcard && (len(names) == 0 || slices.Contains(names, "*"))
	if s.has(FaultRESTWildcardIgnored) {
		wildcard = false // breaks WILD-2, WILD-1
	}
	if s.has(FaultNamedIsWildcard) && t.Wildcard {
		wildcard = true // breaks WILD-8: a poll by name gets everything
	}
	for _, n := range sortedNames(snap.resources) {
		if wildcard || slices.Contains(names, n) {
			resp.Resources = append(resp.Resources, snap.resources[n].res)
		}
	}
	return resp
}

// restJSON encodes a reply as canonical proto3 JSON (REST-3).
func (s *Server) restJSON(resp *discovery.DiscoveryResponse) ([]byte, error) {
	if s.has(FaultRESTGoJSON) {
		// Breaks REST-3: encoding/json over the generated struct writes
		// Any as {"type_url", "value"} instead of "@type" and the
		// message's own fields.
		return json.Marshal(resp)
	}
	return protojson.Marshal(resp)
}
