package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/internal/replay"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

const replayLong = `Replay one side of a transcript file against a live target and report where
the target now behaves differently. The file is what 'xdsconform record'
wrote, or a pair's transcript taken from a JSON report.

--against server plays the client's side against a management server
(--target): the recorded streams are opened in the recorded variant, the
recorded requests sent in order (the nonces and versions of ACKs and NACKs
rewritten to the ones the target sends; responses are matched by stream,
type and order), each response the recording saw is waited for (--timeout)
and compared by what it says: resource names and type URLs, removals, a
missing nonce, resources a client would NACK, and with --compare bodies the
resources themselves (off by default: servers legitimately build them
differently). Literal nonces and versions are not compared. Streams must end
as the recording's did; a response the recording did not have, up to
--quiet after the last entry, is a difference. The target must hold the
state the recording's server held (the same server, or a new build of it
with the same configuration): replay does not set resources.

--against client plays the server's side against an xDS client: started
for it (--target builtin:reference|builtin:grpc-go, or --client-cmd, as in
'xdsconform client'), or started by you and pointed at --listen. Recorded
responses are served in answer to the requests they followed; each request
the client sends is compared with the recorded one (type, names, first
request, ACK or NACK of the nonce and version served).

Credentials the recording redacted are filled with generated material: a
private key with a freshly generated key and a self-signed certificate to
match, any other secret with a random token.

Exit codes: 0 no difference, 1 differences (one line each, naming the
file's entry), 2 bad flags or a transcript that cannot be replayed, 3 the
target cannot be reached.`

const replayExample = `  # the same server, after a fix: does it still do what the recording shows?
  xdsconform replay --against server --target 127.0.0.1:18000 bug.json

  # serve the recording's responses to grpc-go's xDS client
  xdsconform replay --against client --target builtin:grpc-go bug.json

  # to a client you start yourself, pointed at 127.0.0.1:19000
  xdsconform replay --against client --listen 127.0.0.1:19000 bug.json`

type replayFlags struct {
	against        string
	target         string
	fixture        string
	tls            targets.TLSOptions
	metadata       []string
	faults         []string
	connectTimeout time.Duration
	timeout, quiet time.Duration
	start          time.Duration
	compare        string
	nodeID         string
	clientCmd      string
	clientDir      string
	listen         string
	maxRecv        byteSize
	transcriptOut  string
	redactHeaders  []string
}

func newReplayCmd(out io.Writer) *cobra.Command {
	f := &replayFlags{maxRecv: byteSize(targets.DefaultMaxRecvSize)}
	c := &cobra.Command{
		Use:     "replay --against server|client [flags] TRANSCRIPT",
		Short:   "Replay one side of a transcript against a target and report the differences",
		Long:    replayLong,
		Example: replayExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runReplay(c, out, f, args[0])
		},
	}
	fs := c.Flags()
	fs.StringVar(&f.against, "against", "", "which side the target plays: server (the transcript's client side is replayed) or client (its server side is)")
	fs.StringVar(&f.target, "target", "", "server: HOST:PORT or builtin:NAME; client: builtin:reference or builtin:grpc-go")
	fs.StringVar(&f.fixture, "fixture", "", "server: HOST:PORT of the target's fixture API: the replay sets the configuration the recording shows the server held, and each change made while it ran, for the recorded node (a builtin: target's own fixture is used)")
	fs.BoolVar(&f.tls.Enabled, "tls", false, "server: connect with TLS (verified against the system roots unless --tls-ca)")
	fs.StringVar(&f.tls.CAFile, "tls-ca", "", "server: PEM file of the CA that signed the server certificate")
	fs.StringVar(&f.tls.CertFile, "tls-cert", "", "server: PEM client certificate for mutual TLS")
	fs.StringVar(&f.tls.KeyFile, "tls-key", "", "server: PEM client key for mutual TLS")
	fs.StringVar(&f.tls.ServerName, "tls-server-name", "", "server: name to verify in the server certificate")
	fs.StringArrayVar(&f.metadata, "metadata", nil, "server: gRPC call metadata KEY=VALUE sent on every stream (repeatable; the recording's own metadata is not replayed)")
	fs.StringSliceVar(&f.faults, "fault", nil, "builtin:reference only: switch on a fault of the reference server or client")
	fs.DurationVar(&f.connectTimeout, "connect-timeout", 5*time.Second, "server: how long to wait for the target to accept a connection")
	fs.DurationVar(&f.timeout, "timeout", replay.DefaultTimeout, "how long to wait for each message or stream end the recording shows")
	fs.DurationVar(&f.quiet, "quiet", replay.DefaultQuiet, "how long after the last entry a message the recording did not have is still watched for")
	fs.DurationVar(&f.start, "start-timeout", 10*time.Second, "client: how long the client may take to open its first stream")
	fs.StringVar(&f.compare, "compare", "", "server: 'bodies' compares the resources' bodies too (after redaction)")
	fs.StringVar(&f.nodeID, "node-id", "", "server: replace node.id in the replayed requests (the target knows the client under another id)")
	fs.StringVar(&f.clientCmd, "client-cmd", "", "client: shell command starting the client, as for 'xdsconform client' ({{.Bootstrap}}, {{.Target}}, ...)")
	fs.StringVar(&f.clientDir, "client-dir", "", "client: directory --client-cmd runs in")
	fs.StringVar(&f.listen, "listen", "", "client: serve on this HOST:PORT and wait for a client you start, pointed there")
	fs.Var(&f.maxRecv, "max-recv-size", maxRecvSizeHelp("the target"))
	fs.StringVar(&f.transcriptOut, "transcript-out", "", "write the replay's own transcript to this file")
	fs.StringArrayVar(&f.redactHeaders, "redact-header", nil, "a header NAME whose values are secrets, redacted in the output (repeatable)")
	return c
}

// validate rejects flags that do not apply to --against, each with one
// line, before anything starts.
func (f *replayFlags) validate(c *cobra.Command) error {
	changed := func(names ...string) []string {
		var out []string
		for _, n := range names {
			if c.Flags().Changed(n) {
				out = append(out, "--"+n)
			}
		}
		return out
	}
	serverOnly := changed("tls", "tls-ca", "tls-cert", "tls-key", "tls-server-name", "metadata", "connect-timeout", "compare", "node-id", "fixture")
	clientOnly := changed("client-cmd", "client-dir", "listen", "start-timeout")
	switch {
	case f.against != "server" && f.against != "client":
		return usageError("--against %q: want server or client", f.against)
	case f.timeout <= 0 || f.quiet <= 0 || f.start <= 0 || f.connectTimeout <= 0:
		return usageError("--timeout, --quiet, --start-timeout and --connect-timeout must be positive")
	case f.compare != "" && f.compare != "bodies":
		return usageError("--compare %q: want bodies", f.compare)
	case f.against == "server" && len(clientOnly) > 0:
		return usageError("%s: only apply to --against client", strings.Join(clientOnly, ", "))
	case f.against == "client" && len(serverOnly) > 0:
		return usageError("%s: only apply to --against server", strings.Join(serverOnly, ", "))
	case len(f.faults) > 0 && f.target != targets.BuiltinReference:
		return usageError("--fault only applies to --target %s", targets.BuiltinReference)
	}
	if err := markSensitiveHeaders(f.redactHeaders); err != nil {
		return err
	}
	if f.against == "server" {
		if f.target == "" {
			return usageError("--against server needs --target (the management server's HOST:PORT, or builtin:NAME)")
		}
		if strings.HasPrefix(f.target, targets.ContainerPrefix) {
			return usageError("--target %s: container targets are not replayed against; start the container and give its HOST:PORT", f.target)
		}
		if !strings.HasPrefix(f.target, "builtin:") {
			if err := checkHostPort("--target", f.target); err != nil {
				return err
			}
		}
		return nil
	}
	n := 0
	for _, set := range []bool{f.target != "", f.clientCmd != "", f.listen != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return usageError("--against client needs exactly one of --target builtin:NAME, --client-cmd and --listen")
	}
	if f.listen != "" {
		return checkAddr("--listen", f.listen, 0)
	}
	return nil
}

func runReplay(c *cobra.Command, out io.Writer, f *replayFlags, path string) error {
	if err := f.validate(c); err != nil {
		return err
	}
	file, err := transcript.ReadFile(c.Context(), path)
	if err != nil {
		return usageError("%v", err)
	}
	plan, err := replay.NewPlan(file)
	if err != nil {
		return usageError("%s: %v", path, err)
	}
	v, err := plan.Variant()
	if err != nil {
		return usageError("%s: %v", path, err)
	}
	var res *replay.Result
	if f.against == "server" {
		res, err = f.replayServer(c.Context(), plan)
	} else {
		res, err = f.replayClient(c.Context(), out, plan, v)
	}
	if err != nil {
		return err
	}
	if f.transcriptOut != "" && res.Transcript != nil {
		tf := &transcript.File{Recorded: time.Now().UTC(), HarnessVersion: version, Side: transcript.SideClient, Variant: v.String(),
			Source: fmt.Sprintf("xdsconform replay of %s against %s", path, res.Against), Entries: transcript.ScrubEntries(res.Transcript.Entries())}
		if f.against == "client" {
			tf.Side = transcript.SideServer
		}
		if err := transcript.WriteFile(f.transcriptOut, tf); err != nil {
			return usageError("--transcript-out: %v", err)
		}
	}
	res.Write(out)
	if !res.Same() {
		return &exitError{code: exitFailures, err: errors.New("the target behaves differently from the recording")}
	}
	return nil
}

// replayServer replays the client's side against --target.
func (f *replayFlags) replayServer(ctx context.Context, plan *replay.Plan) (*replay.Result, error) {
	opts := targets.ServerOptions{Target: f.target, Fixture: f.fixture, TLS: f.tls, ConnectTimeout: f.connectTimeout, MaxRecvSize: int(f.maxRecv)}
	var err error
	if opts.Metadata, err = keyValues("metadata", f.metadata, true); err != nil {
		return nil, err
	}
	transcript.RememberHeaders(opts.Metadata)
	for _, name := range f.faults {
		fault, err := targets.ParseFault(targets.ServerFaults(targets.BuiltinReference), name)
		if err != nil {
			return nil, usageError("--fault: %v", err)
		}
		opts.Faults = append(opts.Faults, fault.Name)
	}
	srv, err := startServer(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	res, err := replay.Server(ctx, plan, replay.ServerOptions{
		Against: srv.Name, Connect: func() (*grpc.ClientConn, error) { return srv.Connect() },
		Metadata: opts.Metadata, Timeout: f.timeout, Quiet: f.quiet, Bodies: f.compare == "bodies", NodeID: f.nodeID,
		Fixture: srv.Fixture, ConfigNode: cmp.Or(f.nodeID, nodeOf(plan)),
	})
	if err != nil {
		return nil, replayError(ctx, err)
	}
	return res, nil
}

// replayClient serves the server's side to a client.
func (f *replayFlags) replayClient(ctx context.Context, out io.Writer, plan *replay.Plan, v wire.Variant) (*replay.Result, error) {
	tr := transcript.New()
	srv, err := fakeserver.Start(fakeserver.Options{Addr: f.listen, Variant: v, Timeout: f.timeout, Quiet: f.quiet, Transcript: tr, MaxRecvSize: int(f.maxRecv)})
	if err != nil {
		return nil, usageError("--listen: %v", err)
	}
	defer srv.Close()
	against := "the client on " + srv.Addr()
	var running targets.Running // the client the harness launched, if it did
	if f.listen != "" {
		fmt.Fprintf(out, "waiting up to %s for a client on %s (%s, listener %q)\n", f.start, srv.Addr(), v, listenerOf(plan))
	} else {
		clients, err := targets.NewClients(targets.ClientOptions{
			Target: f.target, Command: f.clientCmd, Dir: f.clientDir, Variants: []wire.Variant{v},
			Observer: targets.ObserveNone, Faults: f.faults, StartTimeout: f.start, MaxRecvSize: int(f.maxRecv),
		})
		if err != nil {
			return nil, usageError("%v", err)
		}
		if running, err = clients.Launch(ctx, targets.LaunchSpec{ServerAddr: srv.Addr(), NodeID: nodeOf(plan), Cluster: "xdsconform", Listener: listenerOf(plan), Variant: v}); err != nil {
			return nil, &exitError{code: exitUnreachable, err: fmt.Errorf("starting the client: %w", err)}
		}
		defer func() { _ = running.Stop() }()
		against = clients.Name()
	}
	res, err := replay.Client(ctx, plan, replay.ClientOptions{Against: against, Server: srv, Timeout: f.timeout, Quiet: f.quiet, Start: f.start, Transcript: tr})
	if err != nil {
		if errors.Is(err, replay.ErrUnreachable) && ctx.Err() == nil {
			// No client connected within --start-timeout: name the flag,
			// and say what a launched client printed meanwhile.
			err = fmt.Errorf("%w (%s %v: raise it if the client is only slow to start)%s", err, targets.StartTimeoutFlag, f.start, targets.OutputNote(running))
		}
		return nil, replayError(ctx, err)
	}
	return res, nil
}

// replayError is the exit of a replay that could not be made: an
// interrupt, a target that could not be reached, or a transcript that
// cannot be replayed.
func replayError(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return &exitError{code: exitInterrupted, err: err}
	case errors.Is(err, replay.ErrUnreachable):
		return &exitError{code: exitUnreachable, err: err}
	}
	return usageError("%v", err)
}

// listenerOf is the first listener the recorded client asked for: the
// name a gRPC client is pointed at.
func listenerOf(p *replay.Plan) string {
	for _, st := range p.Steps {
		if st.Kind != replay.Request || st.TypeURL != wire.Listener.URL {
			continue
		}
		switch m := st.Message.(type) {
		case *discovery.DiscoveryRequest:
			if len(m.GetResourceNames()) > 0 {
				return m.GetResourceNames()[0]
			}
		case *discovery.DeltaDiscoveryRequest:
			if len(m.GetResourceNamesSubscribe()) > 0 {
				return m.GetResourceNamesSubscribe()[0]
			}
		}
	}
	return "listener"
}

// nodeOf is the recorded client's node id.
func nodeOf(p *replay.Plan) string {
	for _, st := range p.Steps {
		switch m := st.Message.(type) {
		case *discovery.DiscoveryRequest:
			if id := m.GetNode().GetId(); id != "" {
				return id
			}
		case *discovery.DeltaDiscoveryRequest:
			if id := m.GetNode().GetId(); id != "" {
				return id
			}
		}
	}
	return "xdsconform-replay"
}
