// Package builtin registers the built-in targets with package targets when
// imported:
//
//	import _ "github.com/xdsconform/xdsconform/peers/builtin"
//
// Server targets: builtin:reference (the reference management server, with
// its fault switches), builtin:go-control-plane (go-control-plane's
// SnapshotCache) and builtin:go-control-plane-linear (its LinearCache),
// each run in-process with its fixture API. Client targets:
// builtin:reference (the reference xDS client, in-process, with its fault
// switches) and builtin:grpc-go (grpc-go's xDS client, as a child process
// of the running binary).
//
// They are a package of their own so that a program that does not run
// them, a test that embeds the suites against its own server, does not
// link them: the reference peers, go-control-plane's caches and grpc-go's
// xDS client. The xdsconform command imports this package.
//
// builtin:grpc-go re-executes the running binary as its client: a program
// that runs it must call RunChildIfRequested first thing in main, or in
// TestMain of a test.
package builtin

import (
	"cmp"
	"context"
	"fmt"

	"github.com/xdsconform/xdsconform/internal/bootstrap"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/peers/gcpserver"
	"github.com/xdsconform/xdsconform/peers/grpcgoclient"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

func init() {
	targets.RegisterServer(targets.ServerBuiltin{Name: targets.BuiltinReference, Faults: ServerFaults(), New: newReferenceServer})
	targets.RegisterServer(targets.ServerBuiltin{Name: targets.BuiltinGoControlPlane, New: newGCPServer(gcpserver.Snapshot)})
	targets.RegisterServer(targets.ServerBuiltin{Name: targets.BuiltinGoControlPlaneLin, New: newGCPServer(gcpserver.Linear)})
	targets.RegisterClient(targets.ClientBuiltin{
		Name: targets.BuiltinReference,
		// REST too: its scenarios are the Envoy profile's (REST-JSON
		// polling is an Envoy feature), which the profile decides.
		Variants:     append(append([]wire.Variant(nil), wire.AllVariants...), wire.REST),
		AdminProfile: targets.ProfileEnvoy,
		// The reference client implements every optional feature.
		Features:  targets.ClientFeatures,
		Faults:    ClientFaults(),
		InProcess: true,
		Launch:    launchReferenceClient,
	})
	targets.RegisterClient(targets.ClientBuiltin{
		Name:     targets.BuiltinGRPCGo,
		Variants: []wire.Variant{wire.SotWADS}, // grpc-go speaks SotW ADS only
		Profiles: []string{targets.ProfileGRPC},
		// grpc-go implements gRFC A47 federation (xdstp names,
		// authorities, templates), on by default since 1.55; not
		// directives, collections, redirects, dynamic parameters or
		// resource errors. What a real client implements is read from
		// its source (COMPATIBILITY.md says where).
		Features: []string{targets.ClientFeatureXdstp},
		Launch:   launchGRPCGo,
	})
}

// RunChildIfRequested turns this process into builtin:grpc-go's client and
// exits, if it was started as one; otherwise it returns at once. Call it
// first thing in main, and in TestMain of a test that runs builtin:grpc-go:
// that target re-executes the running binary, because grpc-go reads its
// xDS bootstrap once per process.
func RunChildIfRequested() { grpcgoclient.RunChildIfRequested() }

// ServerFaults are the reference server's fault switches, each breaking
// one rule.
func ServerFaults() []targets.Fault {
	out := make([]targets.Fault, len(refserver.AllFaults))
	for i, f := range refserver.AllFaults {
		out[i] = targets.Fault{Name: string(f), Description: f.Description()}
	}
	return out
}

// ClientFaults are the reference client's fault switches, each breaking one
// rule, with the profile each acts in.
func ClientFaults() []targets.Fault {
	out := make([]targets.Fault, len(refclient.AllFaults))
	for i, f := range refclient.AllFaults {
		out[i] = targets.Fault{Name: string(f), Description: f.Description(), Profile: f.Profile()}
	}
	return out
}

// newReferenceServer makes the reference server with l's faults and REST
// hold: targets.ReferenceRESTHold unless l gives another, so that the
// long-poll check, whose window must outlast the hold, fits the suite.
func newReferenceServer(_ context.Context, l targets.ServerLaunch) (targets.InProcess, error) {
	fs := make([]refserver.Fault, len(l.Faults))
	for i, f := range l.Faults {
		fs[i] = refserver.Fault(f)
	}
	return refserver.New(fs...).WithRESTHold(cmp.Or(l.RESTHold, targets.ReferenceRESTHold)), nil
}

func newGCPServer(flavour gcpserver.Flavour) func(context.Context, targets.ServerLaunch) (targets.InProcess, error) {
	return func(ctx context.Context, _ targets.ServerLaunch) (targets.InProcess, error) {
		g, err := gcpserver.New(ctx, flavour)
		if err != nil {
			return nil, err
		}
		return g, nil
	}
}

func launchReferenceClient(ctx context.Context, l targets.BuiltinLaunch) (targets.Running, error) {
	var auths map[string]refclient.Authority
	for _, a := range l.Authorities {
		if auths == nil {
			auths = map[string]refclient.Authority{}
		}
		auths[a.Name] = refclient.Authority{Server: a.ServerAddr, ListenerTemplate: a.ListenerTemplate}
	}
	faults := make([]refclient.Fault, len(l.Faults))
	for i, f := range l.Faults {
		faults[i] = refclient.Fault(f)
	}
	rc, err := refclient.Start(ctx, refclient.Config{
		ServerAddr: l.ServerAddr, NodeID: l.NodeID, Cluster: l.Cluster,
		Variant: l.Variant, Listener: l.Listener, DNETimeout: l.DNETimer, RESTRefresh: l.RESTRefresh, Faults: faults,
		Profile: l.Profile, DynamicParameters: l.DynamicParameters, CDSFile: refFileSource(l.CDSFile),
		Target: l.Target, Authorities: auths, DefaultListenerTemplate: l.DefaultListenerTemplate,
	})
	if err != nil {
		return nil, fmt.Errorf("starting the reference client: %w", err)
	}
	var obs observer.Observer
	if l.Observer == targets.ObserveAdmin {
		// The Envoy profile: observed as an Envoy is, through /config_dump.
		obs = observer.NewConfigDump(rc.AdminAddr(), observer.MaxBytes(l.MaxStatusSize))
	} else if obs, err = observer.DialCSDS(rc.CSDSAddr(), observer.MaxBytes(l.MaxStatusSize)); err != nil {
		rc.Close()
		return nil, fmt.Errorf("connecting to the reference client's CSDS: %w", err)
	}
	return &running{obs: obs, done: rc.Done(), err: rc.Err, stop: rc.Close}, nil
}

func launchGRPCGo(ctx context.Context, l targets.BuiltinLaunch) (targets.Running, error) {
	b, err := l.GRPCBootstrap(l.Variant)
	if err != nil {
		return nil, fmt.Errorf("rendering the gRPC bootstrap: %w", err)
	}
	// Launch waits for the child's CSDS address: bounded by the start
	// timeout, not by the scenario's.
	startCtx, cancel := context.WithTimeout(ctx, l.StartTimeout)
	defer cancel()
	gc, err := grpcgoclient.LaunchTarget(startCtx, b, l.ChannelTarget())
	if err != nil {
		if startCtx.Err() != nil && ctx.Err() == nil {
			// The start's own bound ended it; err carries the child's output.
			return nil, targets.StartTimeoutError("grpc-go's xDS client did not serve CSDS", l.StartTimeout, err)
		}
		return nil, fmt.Errorf("starting grpc-go's xDS client: %w", err)
	}
	obs, err := observer.DialCSDS(gc.CSDSAddr(), observer.MaxBytes(l.MaxStatusSize))
	if err != nil {
		gc.Stop()
		return nil, fmt.Errorf("connecting to grpc-go's CSDS: %w", err)
	}
	return &printing{running: running{obs: obs, done: gc.Exited(), err: gc.Err, stop: gc.Stop}, output: gc.Output}, nil
}

// refFileSource is f for the reference client.
func refFileSource(f *bootstrap.FileSource) *refclient.FileSource {
	if f == nil {
		return nil
	}
	return &refclient.FileSource{Path: f.Path, WatchedDirectory: f.WatchedDirectory}
}

// running is a launched built-in client as targets.Running.
type running struct {
	obs  observer.Observer
	done <-chan struct{}
	err  func() error
	stop func()
}

// printing is a launched built-in client that is a process, whose output
// the harness reads (targets.Output).
type printing struct {
	running
	output func() string
}

// Output is the end of what the client printed so far.
func (r *printing) Output() string { return r.output() }

func (r *running) Observer() observer.Observer { return r.obs }
func (r *running) Exited() <-chan struct{}     { return r.done }
func (r *running) Err() error                  { return r.err() }
func (r *running) Stop() error {
	if r.obs != nil {
		_ = r.obs.Close()
	}
	r.stop()
	return nil
}
