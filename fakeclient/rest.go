package fakeclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// RESTClient polls a management server over REST-JSON, the REST variant:
// each poll is one POST of a DiscoveryRequest, as canonical proto3 JSON,
// to the type's /v3/discovery:<type> path (REST-3, REST-5), answered by at
// most one DiscoveryResponse. It keeps no state between polls: the version
// and nonce a poll carries are the scenario's to choose, since what a
// client sends next (an ACK or a NACK) is exactly what REST scenarios
// vary. Every poll and its outcome go to the transcript, under the stream
// name "rest".
type RESTClient struct {
	base    string
	http    *http.Client
	node    *core.Node
	maxBody int64
	tr      *transcript.Transcript
	onSend  func()
}

// RESTOptions configure a RESTClient.
type RESTOptions struct {
	// HTTP sends the polls; nil uses http.DefaultClient. It carries the
	// target's TLS settings.
	HTTP *http.Client
	// Node is sent in every poll: REST has no stream to remember it.
	Node *core.Node
	// MaxBody bounds the bytes read of one reply (wire.MaxRecvSize(0)
	// when zero), so a hostile server cannot exhaust memory.
	MaxBody int64
	// Transcript records every poll; nil records nothing.
	Transcript *transcript.Transcript
	// OnSend, if set, is called once each poll was written to the
	// target, answered or not (a poll that kills the target gets no
	// answer): see Options.OnSend.
	OnSend func()
}

// NewREST returns a client for the REST endpoint at base ("http://host:port").
func NewREST(base string, opts RESTOptions) *RESTClient {
	if opts.HTTP == nil {
		opts.HTTP = http.DefaultClient
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = int64(wire.MaxRecvSize(0))
	}
	return &RESTClient{base: strings.TrimSuffix(base, "/"), http: opts.HTTP, node: opts.Node, maxBody: opts.MaxBody, tr: opts.Transcript, onSend: opts.OnSend}
}

// restStream is the transcript stream name of REST polls.
const restStream = "rest"

// Poll is the outcome of one REST poll.
type Poll struct {
	// Status is the HTTP status of the reply.
	Status int
	// Response is the reply decoded as a DiscoveryResponse; nil when the
	// status is not 200 or the body did not decode (DecodeErr).
	Response *discovery.DiscoveryResponse
	// DecodeErr says why a 200 reply's body is not canonical proto3 JSON
	// of a DiscoveryResponse (REST-3).
	DecodeErr error
	// Body is the start of the reply's body, for evidence.
	Body string
}

// Post sends req, as canonical proto3 JSON with the node filled in, to the
// REST path of type t and waits, bounded by ctx, for the reply. A held
// long poll (REST-4) returns when the server answers or ctx ends; the
// latter is an error wrapping ctx.Err().
func (c *RESTClient) Post(ctx context.Context, t wire.Type, req *discovery.DiscoveryRequest) (*Poll, error) {
	return c.PostWith(ctx, t, req, protojson.MarshalOptions{})
}

// PostWith is Post with the JSON printer's options: UseProtoNames writes
// the original field names, which canonical parsers accept too (REST-3).
func (c *RESTClient) PostWith(ctx context.Context, t wire.Type, req *discovery.DiscoveryRequest, m protojson.MarshalOptions) (*Poll, error) {
	path, ok := t.RESTPath()
	if !ok {
		return nil, fmt.Errorf("%s has no REST endpoint", t.Short)
	}
	if req.GetNode() == nil {
		req.Node = c.node
	}
	if req.GetTypeUrl() == "" {
		req.TypeUrl = t.URL
	}
	body, err := m.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode REST poll: %w", err)
	}
	c.tr.Record(restStream, transcript.Sent, req)
	c.tr.Event(restStream, "POST "+path)
	return c.PostRaw(ctx, path, body)
}

// PostRaw sends body as is to path: REST scenarios use it to probe a
// path or a body shape that PostWith does not write.
func (c *RESTClient) PostRaw(ctx context.Context, path string, body []byte) (*Poll, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("REST poll to %s: %w", path, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if c.onSend != nil {
		hreq = hreq.WithContext(httptrace.WithClientTrace(hreq.Context(), &httptrace.ClientTrace{
			WroteRequest: func(w httptrace.WroteRequestInfo) {
				if w.Err == nil {
					c.onSend()
				}
			},
		}))
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		c.tr.Event(restStream, fmt.Sprintf("POST %s failed: %v", path, err))
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("REST poll to %s: %w", path, ctxErr)
		}
		return nil, fmt.Errorf("REST poll to %s: %w", path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		c.tr.Event(restStream, fmt.Sprintf("reading the reply to POST %s failed: %v", path, err))
		return nil, fmt.Errorf("REST reply from %s: %w", path, err)
	}
	p := &Poll{Status: resp.StatusCode, Body: evidence(raw)}
	switch {
	case int64(len(raw)) > c.maxBody:
		p.DecodeErr = fmt.Errorf("the reply is over the %d-byte receive limit", c.maxBody)
	case resp.StatusCode == http.StatusOK:
		r := &discovery.DiscoveryResponse{}
		// Strict: an unknown field, an Any without "@type" or a field in
		// the wrong JSON shape is not canonical proto3 JSON.
		if err := protojson.Unmarshal(raw, r); err != nil {
			p.DecodeErr = err
		} else {
			p.Response = r
		}
	}
	if p.Response != nil {
		c.tr.Record(restStream, transcript.Received, p.Response)
	} else {
		note := fmt.Sprintf("HTTP %d", resp.StatusCode)
		if p.DecodeErr != nil {
			note += fmt.Sprintf(", not a DiscoveryResponse in proto3 JSON (%v)", p.DecodeErr)
		}
		if p.Body != "" {
			note += ": " + p.Body
		}
		c.tr.Event(restStream, note)
	}
	return p, nil
}

// evidenceBytes is how much of a reply's body a Poll keeps.
const evidenceBytes = 512

// evidence is the start of raw, as text for a report.
func evidence(raw []byte) string {
	if len(raw) > evidenceBytes {
		return transcript.Scrub(string(raw[:evidenceBytes])) + "…"
	}
	return transcript.Scrub(string(raw))
}
