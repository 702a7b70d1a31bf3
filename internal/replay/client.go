package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// ClientOptions configure a replay against an xDS client.
type ClientOptions struct {
	// Against describes the client, for the result.
	Against string
	// Server is the fake management server the client connects to,
	// started by the caller in the plan's variant; its Timeout bounds
	// each wait for a request, its Quiet the window after the last entry.
	Server *fakeserver.Server
	// Timeout and Quiet are the Server's: Timeout bounds each wait for a
	// request or a stream, Quiet is the window after the last entry in
	// which a request or stream the recording did not have counts as a
	// difference.
	Timeout, Quiet time.Duration
	// Start bounds the wait for the client's first stream (a client
	// takes a while to start).
	Start time.Duration
	// Transcript is the Server's, for the result.
	Transcript *transcript.Transcript
}

// clientReplay is the state of one replay against a client.
type clientReplay struct {
	ctx    context.Context
	opts   ClientOptions
	plan   *Plan
	res    *Result
	live   map[*Stream]*fakeserver.Stream
	taken  map[int]bool // live stream IDs mapped to a recorded stream
	types  map[*Stream][]wire.Type
	ended  map[*Stream]bool // live streams known to be over
	last   map[string]*Stream
	filler Filler
}

// Client replays the server's side of plan against an xDS client that
// connects to opts.Server: each recorded stream is matched with the
// client's next stream on the same method, the recorded responses are
// served (placeholders filled) in answer to the requests they followed,
// and each request the client sends is compared with the recorded one:
// its type, names, and whether it is a first request, an ACK or a NACK
// of the nonce and version served. Differences are the result's; an
// error is a replay that could not be made.
func Client(ctx context.Context, plan *Plan, opts ClientOptions) (*Result, error) {
	if opts.Server == nil {
		return nil, errors.New("replay: no fake server for the client")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Quiet <= 0 {
		opts.Quiet = DefaultQuiet
	}
	if opts.Start <= 0 {
		opts.Start = opts.Timeout
	}
	if _, err := plan.Variant(); err != nil {
		return nil, err
	}
	r := &clientReplay{
		ctx: ctx, opts: opts, plan: plan,
		res:   &Result{Against: opts.Against, Notes: slices.Clone(plan.Notes), Transcript: opts.Transcript},
		live:  map[*Stream]*fakeserver.Stream{},
		taken: map[int]bool{},
		types: map[*Stream][]wire.Type{},
		ended: map[*Stream]bool{},
		last:  lastStreams(plan),
	}
	for _, st := range plan.Steps {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("replay interrupted at entry %d: %w", st.Index, err)
		}
		if err := r.step(st); err != nil {
			return nil, err
		}
		r.res.Steps++
	}
	if err := r.quiet(); err != nil {
		return nil, err
	}
	return r.res, nil
}

// lastStreams is, per method key, the last recorded stream: a client
// closing that one ended the recording, not a stream it replaced.
func lastStreams(p *Plan) map[string]*Stream {
	out := map[string]*Stream{}
	for _, s := range p.Streams {
		out[s.Variant.String()+"/"+key(s)] = s
	}
	return out
}

// carries reports whether live stream ls is on s's method.
func carries(ls *fakeserver.Stream, s *Stream) bool {
	if ls.REST || ls.Delta != s.Variant.IsDelta() || (ls.Service == nil) != (s.Type == nil) {
		return false
	}
	return s.Type == nil || ls.Service.URL == s.Type.URL
}

// stream is the live stream standing for s, waiting (bounded) for the
// client to open it: the oldest stream on s's method not standing for
// another.
func (r *clientReplay) stream(s *Stream, at int) (*fakeserver.Stream, error) {
	if ls := r.live[s]; ls != nil {
		return ls, nil
	}
	within := r.opts.Timeout
	if len(r.taken) == 0 {
		within = r.opts.Start
	}
	ctx, cancel := context.WithTimeout(r.ctx, within)
	defer cancel()
	for {
		maxID := 0
		for _, ls := range r.opts.Server.Streams() {
			maxID = max(maxID, ls.ID)
			if !r.taken[ls.ID] && carries(ls, s) {
				r.taken[ls.ID] = true
				r.live[s] = ls
				return ls, nil
			}
		}
		ls, err := r.opts.Server.WaitStream(ctx, maxID)
		if err != nil {
			return nil, fmt.Errorf("waiting for the client's stream: %w", err)
		}
		if ls == nil {
			if r.ctx.Err() != nil {
				return nil, fmt.Errorf("replay interrupted at entry %d: %w", at, r.ctx.Err())
			}
			return nil, nil
		}
	}
}

func (r *clientReplay) step(st Step) error {
	s := st.Stream
	if r.ended[s] && st.Kind != Stopped {
		return nil // said already
	}
	if st.Kind == Stopped || st.Kind == ServerClosed && r.live[s] == nil {
		return nil
	}
	if (st.Kind == ClientClosed || st.Kind == HalfClosed) && r.last[s.Variant.String()+"/"+key(s)] == s {
		// The client leaving its last stream is how the recording ended
		// (the client was stopped): nothing a live client must repeat.
		return nil
	}
	ls, err := r.stream(s, st.Index)
	if err != nil {
		return err
	}
	if ls == nil && len(r.taken) == 0 {
		return fmt.Errorf("%w: no client connected within %s", ErrUnreachable, wording.Duration(r.opts.Start))
	}
	if ls == nil {
		r.ended[s] = true
		r.res.differ(st.Index, s.Name, "the client opened no %s stream within %s where the recording's did", method(s), wording.Duration(r.opts.Timeout))
		return nil
	}
	switch st.Kind {
	case Request:
		r.request(ls, st)
	case Response:
		return r.response(ls, st)
	case ServerClosed:
		var end error
		if st.Code != codes.OK {
			end = status.Error(st.Code, st.Status)
		}
		if err := ls.End(r.ctx, end); err != nil {
			r.res.differ(st.Index, s.Name, "ending the stream as the recording's server did: %v", err)
		}
		r.ended[s] = true
	case ClientClosed, HalfClosed:
		r.clientClosed(ls, st)
	}
	return nil
}

// method names s's method in words.
func method(s *Stream) string {
	if s.Type == nil {
		return s.Variant.String()
	}
	return s.Type.Short + " " + s.Variant.Protocol.String()
}

// request waits for the client's next request of the recorded one's type
// and compares them.
func (r *clientReplay) request(ls *fakeserver.Stream, st Step) {
	s := st.Stream
	t, ok := wire.TypeByURL(st.TypeURL)
	if !ok {
		r.res.note("entry %d: a request of type %s, which the harness does not know: not compared", st.Index, short(st.TypeURL))
		return
	}
	if !slices.ContainsFunc(r.types[s], func(x wire.Type) bool { return x.URL == t.URL }) {
		r.types[s] = append(r.types[s], t)
	}
	rec := requestShapeOf(st.Message)
	req, err := ls.Next(r.ctx, t)
	if err != nil {
		var closed *fakeserver.ClosedError
		switch {
		case errors.As(err, &closed):
			r.ended[s] = true
			r.res.differ(st.Index, s.Name, "the client ended the stream (%v) where the recording's sent %s", closed.Err, rec.describe())
		case errors.Is(err, fakeserver.ErrTimeout):
			r.res.differ(st.Index, s.Name, "the client sent no %s request within %s where the recording's sent %s", t.Short, wording.Duration(r.opts.Timeout), rec.describe())
		default:
			r.res.differ(st.Index, s.Name, "waiting for %s request: %v", wording.A(t.Short), err)
		}
		return
	}
	var lm proto.Message = req.SotW
	if req.Delta != nil {
		lm = req.Delta
	}
	for _, d := range compareRequests(rec, requestShapeOf(lm)) {
		r.res.differ(st.Index, s.Name, "%s request: %s", t.Short, d)
	}
}

// response serves a recorded response, placeholders filled.
func (r *clientReplay) response(ls *fakeserver.Stream, st Step) error {
	m := proto.Clone(st.Message)
	if st.Partial {
		r.res.note("entry %d: the recording holds this response in part (it was larger than a transcript entry): it is served as recorded", st.Index)
	}
	if _, err := r.filler.Fill(m); err != nil {
		return fmt.Errorf("entry %d: %w", st.Index, err)
	}
	if err := ls.Send(r.ctx, m); err != nil {
		var closed *fakeserver.ClosedError
		if errors.As(err, &closed) {
			r.ended[st.Stream] = true
			r.res.differ(st.Index, st.Stream.Name, "the client had ended the stream (%v) before the recording's server sent %s", closed.Err, describeResponse(st.Message))
			return nil
		}
		if r.ctx.Err() != nil {
			return fmt.Errorf("replay interrupted at entry %d: %w", st.Index, r.ctx.Err())
		}
		r.res.differ(st.Index, st.Stream.Name, "serving the recorded response: %v", err)
	}
	return nil
}

// clientClosed waits (bounded) for the client to end a stream the
// recording's client ended before opening another; requests meanwhile
// are ones the recording did not have.
func (r *clientReplay) clientClosed(ls *fakeserver.Stream, st Step) {
	s := st.Stream
	r.ended[s] = true
	t := anyType(s)
	if len(r.types[s]) > 0 {
		t = r.types[s][0]
	}
	deadline := time.Now().Add(r.opts.Timeout)
	for {
		ctx, cancel := context.WithDeadline(r.ctx, deadline)
		req, err := ls.Next(ctx, t)
		cancel()
		var closed *fakeserver.ClosedError
		switch {
		case err == nil:
			r.res.differ(st.Index, s.Name, "an extra %s request (%s) before the client ended the stream", t.Short, requestShapeOf(firstOf(req)).describe())
			continue
		case errors.As(err, &closed):
			return
		case r.ctx.Err() == nil:
			r.res.differ(st.Index, s.Name, "the recording's client ended the stream; the client kept it open for %s", wording.Duration(r.opts.Timeout))
		}
		return
	}
}

func firstOf(req *fakeserver.Request) proto.Message {
	if req.Delta != nil {
		return req.Delta
	}
	return req.SotW
}

// quiet watches, for the quiet window after the last entry, for requests
// and streams the recording did not have. Every stream and type shares
// the one window.
func (r *clientReplay) quiet() error {
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.Quiet)
	defer cancel()
	for _, s := range r.plan.Streams {
		ls := r.live[s]
		if ls == nil || r.ended[s] {
			continue
		}
		for _, t := range r.types[s] {
			for {
				req, err := ls.Next(ctx, t)
				if err != nil {
					if r.ctx.Err() != nil {
						return fmt.Errorf("replay interrupted in the quiet window: %w", r.ctx.Err())
					}
					break
				}
				r.res.differ(0, s.Name, "an extra %s request (%s) within the %s quiet window", t.Short, requestShapeOf(firstOf(req)).describe(), wording.Duration(r.opts.Quiet))
			}
		}
	}
	maxID := 0
	for id := range r.taken {
		maxID = max(maxID, id)
	}
	extra, err := r.opts.Server.ExpectNoStream(r.ctx, maxID)
	switch {
	case extra != nil && !r.taken[extra.ID]:
		r.res.differ(0, "", "the client opened another stream (%s) within the quiet window", extra.Name)
	case err != nil && r.ctx.Err() != nil:
		return fmt.Errorf("replay interrupted in the quiet window: %w", r.ctx.Err())
	}
	return nil
}
