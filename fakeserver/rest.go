package fakeserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// The REST variant (wire.REST): the fake management server answers
// REST-JSON polls, POST /v3/discovery:<type> (REST-5), over plain HTTP on
// its one listener. Each type's polls form one Stream ("CDS-rest#1"), so
// scenarios use the same steps as on gRPC: Expect returns the next poll,
// Respond answers the poll outstanding (or the next one, within the
// timeout), and a poll no one answers is held until the client gives up
// on it. A REST-JSON client has at most one poll of a type outstanding
// (REST-1) and writes canonical proto3 JSON (REST-3): the server records
// a violation of each, and marks the poll so a scenario's own step sees
// it (Request.REST).

// RESTPoll is what the server knows of a REST-JSON poll beyond its
// DiscoveryRequest.
type RESTPoll struct {
	// Body is the POST body as sent.
	Body []byte
	// DecodeErr says why Body is not a DiscoveryRequest in proto3 JSON
	// (REST-3); the request's SotW is then empty.
	DecodeErr error
	// Concurrent counts the client's other polls of the type still
	// outstanding when this one arrived (REST-1: none).
	Concurrent int
}

// restOverlapGrace is how long a poll that finds another of its type
// outstanding waits for that one to end before it counts as concurrent:
// a client that gave up on a held poll closes its connection just before
// it polls again, and the server notices the close asynchronously.
const restOverlapGrace = 100 * time.Millisecond

// maxRESTBody bounds the bytes read of one poll.
const maxRESTBody = 4 << 20

// startREST serves REST-JSON on lis instead of gRPC.
func (s *Server) startREST() {
	s.rest = &http.Server{Handler: http.HandlerFunc(s.serveREST), ReadHeaderTimeout: s.opts.Timeout}
	s.restStreams = map[string]*Stream{}
	go func() {
		defer close(s.done)
		_ = s.rest.Serve(s.lis) // returns when Close stops the server
	}()
}

// closeREST stops the HTTP server, ending held polls, and ends every
// REST stream.
func (s *Server) closeREST() {
	_ = s.rest.Close()
	<-s.done
	s.mu.Lock()
	sts := make([]*Stream, 0, len(s.restStreams))
	for _, st := range s.restStreams {
		sts = append(sts, st)
	}
	s.mu.Unlock()
	for _, st := range sts {
		st.finish(ErrServerClosed, "the harness's server stopped")
		close(st.gone)
	}
}

// restStream returns the stream of t's polls, opening it on the first.
func (s *Server) restStream(t wire.Type) (*Stream, bool) {
	s.mu.Lock()
	st, ok := s.restStreams[t.URL]
	s.mu.Unlock()
	if ok {
		return st, true
	}
	st = newStream(s, &t, false)
	st.REST = true
	if !s.addStream(st) {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if other, ok := s.restStreams[t.URL]; ok {
		return other, true // a concurrent first poll opened it
	}
	s.restStreams[t.URL] = st
	return st, true
}

func (s *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	t, ok := wire.TypeByRESTPath(r.URL.Path)
	if !ok || r.Method != http.MethodPost {
		s.opts.Transcript.Event("rest", fmt.Sprintf("client called %s %s, which is no REST-JSON endpoint (REST-5)", r.Method, r.URL.Path))
		http.Error(w, "no REST endpoint at "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	st, ok := s.restStream(t)
	if !ok {
		http.Error(w, "too many streams", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(wire.MaxRecvSize(s.opts.MaxRecvSize))+1))
	if err != nil || len(body) > wire.MaxRecvSize(s.opts.MaxRecvSize) {
		http.Error(w, "unreadable or oversized body", http.StatusBadRequest)
		return
	}
	poll := &RESTPoll{Body: body}
	req := &discovery.DiscoveryRequest{}
	// Strict: unknown fields fail, as a canonical proto3 JSON parser
	// does; both spellings of field names are canonical (REST-3).
	if err := protojson.Unmarshal(body, req); err != nil {
		poll.DecodeErr = err
		req = &discovery.DiscoveryRequest{}
		s.violate(st, "REST-3", "a poll is not a DiscoveryRequest in canonical proto3 JSON: %v; body: %s", err, transcript.Clip(string(body), 256))
	}
	poll.Concurrent = st.restBegin(r.Context())
	defer st.restEnd()
	if poll.Concurrent > 0 {
		s.violate(st, "REST-1", "a poll arrived while %d other poll(s) of %s were outstanding", poll.Concurrent, t.Short)
	}
	st.receivedREST(req, poll)
	if poll.DecodeErr != nil {
		http.Error(w, "not a DiscoveryRequest in proto3 JSON: "+poll.DecodeErr.Error(), http.StatusBadRequest)
		return
	}
	// Held until the scenario answers, the client gives up, or the
	// server closes.
	select {
	case op := <-st.ops:
		st.mu.Lock()
		st.sent[t.URL]++
		st.mu.Unlock()
		out, err := protojson.Marshal(op.msg)
		if err == nil {
			w.Header().Set("Content-Type", "application/json")
			_, err = w.Write(out)
		}
		if err == nil {
			st.srv.opts.Transcript.Record(st.Name, transcript.Sent, op.msg)
			st.srv.sent()
		}
		op.done <- err
	case <-r.Context().Done():
		s.opts.Transcript.Event(st.Name, "a poll ended unanswered (the client gave up on it)")
	}
}

// restBegin counts a poll of the stream as outstanding and returns how
// many others were, once each had restOverlapGrace to end.
func (st *Stream) restBegin(ctx context.Context) int {
	deadline := time.NewTimer(restOverlapGrace)
	defer deadline.Stop()
	for {
		st.mu.Lock()
		n, notify := st.inFlight, st.notify
		if n == 0 {
			st.inFlight++
			st.mu.Unlock()
			return 0
		}
		st.mu.Unlock()
		select {
		case <-notify: // restEnd wakes the stream
			continue
		case <-deadline.C:
		case <-ctx.Done():
		}
		st.mu.Lock()
		n = st.inFlight
		st.inFlight++
		st.mu.Unlock()
		return n
	}
}

// restEnd counts a poll as no longer outstanding.
func (st *Stream) restEnd() {
	st.mu.Lock()
	st.inFlight--
	st.wake()
	st.mu.Unlock()
}

// receivedREST queues a poll as the stream's next request.
func (st *Stream) receivedREST(req *discovery.DiscoveryRequest, poll *RESTPoll) {
	st.receive(req, poll)
}
