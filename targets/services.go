package targets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/wire"
)

// xdsMethods are the discovery methods a management server may serve:
// ADS first, then every per-type service, SotW and delta.
func xdsMethods() []string {
	out := []string{
		wire.MethodFor(wire.Variant{Protocol: wire.SotW, Transport: wire.ADS}, wire.Type{}),
		wire.MethodFor(wire.Variant{Protocol: wire.Delta, Transport: wire.ADS}, wire.Type{}),
	}
	for _, t := range wire.AllTypes {
		for _, p := range []wire.Protocol{wire.SotW, wire.Delta} {
			if t.Speaks(p) {
				out = append(out, wire.MethodFor(wire.Variant{Protocol: p, Transport: wire.PerType}, t))
			}
		}
	}
	return out
}

// silentServes is how long a discovery stream the harness has half-closed
// may stay silent before the method counts as served: a server that does
// not serve a method answers Unimplemented at once, one that serves it
// either ends the stream (the client has nothing more to say) or waits.
const silentServes = time.Second

// reflectionWait bounds the gRPC reflection request of a probe: a server
// that offers reflection answers a list at once, and one that does not
// answers Unimplemented at once, so this only bounds a server that holds
// the stream.
const reflectionWait = time.Second

// notListed is why a method counts as not served when the target's gRPC
// reflection does not list its service.
const notListed = "not listed by its gRPC reflection"

// Services is what the target was found to serve when no fixture claims
// it: which discovery methods answered, and why the others did not.
type Services struct {
	// unserved maps every discovery method ("/service/method") found not
	// served to why: the gRPC code it answered, or notListed.
	unserved map[string]string
	// reflection lists the services the target's gRPC reflection named;
	// nil when it offers none.
	reflection []string
}

// Serves reports whether the probe found method ("/service/method")
// served.
func (s *Services) Serves(method string) bool {
	_, not := s.unserved[method]
	return !not
}

// All reports whether the target serves every discovery method.
func (s *Services) All() bool { return len(s.unserved) == 0 }

// Variants lists the variants in which the target serves something: ADS
// variants by their one method, per-type ones by any of their services.
func (s *Services) Variants() []wire.Variant {
	var out []wire.Variant
	for _, v := range wire.AllVariants {
		if s.lacksVariant(v) == "" {
			out = append(out, v)
		}
	}
	return out
}

// lacks is the reason to skip scenario sc in variant v on a target that
// does not serve what the pair would open, or "": in ADS variants the one
// aggregated method; in per-type ones the service of every type the
// scenario names (NeedType), or any per-type service of the protocol when
// it names none.
func (s *Services) lacks(sc *engine.Scenario, v wire.Variant) string {
	if v.IsREST() {
		return "" // REST is not gRPC: --rest-target names it
	}
	if v.Transport == wire.ADS {
		return s.lacksMethod(wire.MethodFor(v, wire.Type{}))
	}
	named := false
	for _, n := range sc.Needs {
		t, ok := wire.TypeByShort(strings.TrimPrefix(string(n), fixture.TypePrefix))
		if !strings.HasPrefix(string(n), fixture.TypePrefix) || !ok || !t.Speaks(v.Protocol) {
			continue // an unknown type or one without the method: Lacks says so
		}
		named = true
		if reason := s.lacksMethod(wire.MethodFor(v, t)); reason != "" {
			return reason
		}
	}
	if named {
		return ""
	}
	return s.lacksVariant(v)
}

// lacksVariant is the reason v is not served at all, or "".
func (s *Services) lacksVariant(v wire.Variant) string {
	if v.Transport == wire.ADS {
		return s.lacksMethod(wire.MethodFor(v, wire.Type{}))
	}
	var why []string
	for _, t := range wire.AllTypes {
		if !t.Speaks(v.Protocol) {
			continue
		}
		m := wire.MethodFor(v, t)
		if s.Serves(m) {
			return ""
		}
		if !slices.Contains(why, s.unserved[m]) {
			why = append(why, s.unserved[m])
		}
	}
	return fmt.Sprintf("the target serves no per-type %s discovery service (%s)", v.Protocol, strings.Join(why, ", "))
}

// lacksMethod is the reason a pair that opens method cannot run, or "".
func (s *Services) lacksMethod(method string) string {
	why, not := s.unserved[method]
	if !not {
		return ""
	}
	return fmt.Sprintf("the target does not serve %s (%s)", strings.TrimPrefix(method, "/"), why)
}

// String says what the target serves, for a report: the variants, and for
// per-type variants that lack some services, the types they serve.
func (s *Services) String() string {
	var parts []string
	for _, v := range s.Variants() {
		if v.Transport == wire.ADS {
			parts = append(parts, v.String())
			continue
		}
		var types []string
		all := true
		for _, t := range wire.AllTypes {
			if !t.Speaks(v.Protocol) {
				continue
			}
			if s.Serves(wire.MethodFor(v, t)) {
				types = append(types, t.Short)
			} else {
				all = false
			}
		}
		if all {
			parts = append(parts, v.String())
		} else {
			parts = append(parts, v.String()+" ("+strings.Join(types, ",")+")")
		}
	}
	return strings.Join(parts, ", ")
}

// probeServices asks the target, over conn, which discovery methods it
// serves. With all, every method is asked (after gRPC reflection, when
// the target offers it, has ruled out the services it does not list), for
// a target without a fixture, whose claims would say it. Without all, ADS
// is asked first and alone and the rest only if it is not served, and the
// probe stops at the first method served: a target whose fixture claims
// its variants sees one empty stream. A target that serves no discovery
// method is ErrNoXDS, with what it answered; a connection that fails is
// ErrUnreachable with grpc's cause.
func probeServices(ctx context.Context, conn *grpc.ClientConn, addr string, all bool) (*Services, error) {
	s := &Services{unserved: map[string]string{}}
	methods := xdsMethods()
	var batches [][]string
	if all {
		s.reflection = reflectedServices(ctx, conn)
		var ask []string
		for _, m := range methods {
			if s.reflection != nil && !slices.Contains(s.reflection, serviceOf(m)) {
				s.unserved[m] = notListed
				continue
			}
			ask = append(ask, m)
		}
		batches = [][]string{ask}
	} else {
		batches = [][]string{methods[:1], methods[1:]}
	}
	var answers []answer
	for _, batch := range batches {
		got, served, err := askMethods(ctx, conn, batch, !all)
		if err != nil {
			return nil, err
		}
		answers = append(answers, got...)
		if served && !all {
			return s, nil // a fixture claims the rest
		}
	}
	servesOne := false
	for _, a := range answers {
		if a.served() {
			servesOne = true
		} else {
			s.unserved[a.method] = a.code.String()
		}
	}
	if !servesOne {
		return nil, noXDS(ctx, conn, addr, s, answers, all)
	}
	return s, nil
}

// answer is how one discovery stream the probe opened ended.
type answer struct {
	method string
	code   codes.Code // OK: served (it ended the stream or waited)
	msg    string
}

// served reports whether the answer shows the method served: anything
// but Unimplemented, and but a reply that is not gRPC at all (an HTTP/2
// server answering with its own status and content type, which grpc-go
// reports as Unimplemented or Unknown with the HTTP status in words).
func (a answer) served() bool { return a.code != codes.Unimplemented && !a.notGRPC() }

// notGRPC reports whether the answer came from an HTTP/2 server that is
// not a gRPC server: grpc-go names the HTTP status or the content type it
// did not expect.
func (a answer) notGRPC() bool {
	return strings.Contains(a.msg, "unexpected HTTP status code") || strings.Contains(a.msg, "content-type")
}

// askMethods opens a stream on every one of methods at once and returns
// how each ended, and whether one was served; with firstServed it stops
// as soon as one is. A connection that fails is ErrUnreachable.
func askMethods(ctx context.Context, conn *grpc.ClientConn, methods []string, firstServed bool) ([]answer, bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan answer, len(methods))
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, m := range methods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := askMethod(ctx, conn, m)
			st := status.Convert(err)
			answers <- answer{method: m, code: st.Code(), msg: st.Message()}
		}()
	}
	var out []answer
	served := false
	for range methods {
		a := <-answers
		switch a.code {
		case codes.Unavailable:
			// The connection itself failed: grpc's message carries the
			// cause (its last connection error).
			return nil, false, fmt.Errorf("%w: %s: %v", ErrUnreachable, conn.Target(), a.msg)
		case codes.DeadlineExceeded, codes.Canceled:
			if ctx.Err() != nil {
				return nil, false, fmt.Errorf("%w: %s did not answer a discovery stream in time", ErrUnreachable, conn.Target())
			}
		}
		out = append(out, a)
		if a.served() {
			served = true
			if firstServed {
				return out, true, nil
			}
		}
	}
	return out, served, nil
}

// askMethod opens a stream on method, half-closes it at once and returns
// how it ended: Unimplemented when the method is not served, nil when the
// stream stayed silent for silentServes (served, waiting for a request).
func askMethod(ctx context.Context, conn *grpc.ClientConn, method string) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cs, err := conn.NewStream(sctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method)
	if err != nil {
		return err
	}
	if err := cs.CloseSend(); err != nil {
		return err
	}
	silent := time.AfterFunc(silentServes, cancel)
	defer silent.Stop()
	err = cs.RecvMsg(&discovery.DiscoveryResponse{})
	if !silent.Stop() && ctx.Err() == nil {
		return nil // silent: it serves the method and waits for a request
	}
	if err == io.EOF {
		return nil // ended with OK: served
	}
	return err
}

// serviceOf is the service of a "/service/method" name.
func serviceOf(method string) string {
	svc, _, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	return svc
}

// reflectedServices lists the services the target's gRPC reflection names
// (v1, else v1alpha); nil when it offers no
// reflection or does not answer within reflectionWait.
func reflectedServices(ctx context.Context, conn *grpc.ClientConn) []string {
	ctx, cancel := context.WithTimeout(ctx, reflectionWait)
	defer cancel()
	if names, err := listV1(ctx, conn); err == nil {
		return names
	}
	if names, err := listV1alpha(ctx, conn); err == nil {
		return names
	}
	return nil
}

// maxKept bounds how many service names the probe keeps from a target's
// reflection; no server serves more, and the list is the target's to make.
const maxKept = 4096

// maxListed bounds how many of the service names a target's reflection
// gives are shown in a message: the list is the target's to make.
const maxListed = 64

func listV1(ctx context.Context, conn *grpc.ClientConn) ([]string, error) {
	st, err := reflectionv1.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = st.CloseSend() }()
	req := &reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{}}
	if err := st.Send(req); err != nil {
		return nil, err
	}
	resp, err := st.Recv()
	if err != nil {
		return nil, err
	}
	list := resp.GetListServicesResponse()
	if list == nil {
		return nil, errors.New("reflection answered without a list")
	}
	return serviceNames(list.GetService()), nil
}

func listV1alpha(ctx context.Context, conn *grpc.ClientConn) ([]string, error) {
	st, err := reflectionv1alpha.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = st.CloseSend() }()
	req := &reflectionv1alpha.ServerReflectionRequest{MessageRequest: &reflectionv1alpha.ServerReflectionRequest_ListServices{}}
	if err := st.Send(req); err != nil {
		return nil, err
	}
	resp, err := st.Recv()
	if err != nil {
		return nil, err
	}
	list := resp.GetListServicesResponse()
	if list == nil {
		return nil, errors.New("reflection answered without a list")
	}
	return serviceNames(list.GetService()), nil
}

// serviceNames are the names of the first maxKept services of a
// reflection list, of either reflection version.
func serviceNames[S interface{ GetName() string }](list []S) []string {
	names := []string{}
	for _, s := range list[:min(len(list), maxKept)] {
		names = append(names, s.GetName())
	}
	return names
}

// listed is names as a message shows them: sorted, each shown safely,
// at most maxListed of them.
func listed(names []string) string {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	out := make([]string, 0, min(len(names), maxListed)+1)
	for _, n := range names[:min(len(names), maxListed)] {
		out = append(out, shown(n))
	}
	if len(names) > maxListed {
		out = append(out, fmt.Sprintf("and %d more", len(names)-maxListed))
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

// noXDS is the ErrNoXDS of a target that serves no discovery method, in
// one line naming what answered: a server that is not gRPC, or what the
// gRPC server said, its reflection's list and whether it is a fixture API.
func noXDS(ctx context.Context, conn *grpc.ClientConn, addr string, s *Services, answers []answer, all bool) error {
	for _, a := range answers {
		if a.notGRPC() {
			// grpc-go's first line names the HTTP status and content
			// type; the body it quotes after it is the target's.
			first, _, _ := strings.Cut(a.msg, "\n")
			return fmt.Errorf("%s is an HTTP/2 server but not a gRPC one, so it %w: it answered a discovery stream with %s", addr, ErrNoXDS, shownMessage(first))
		}
	}
	if !all && s.reflection == nil {
		s.reflection = reflectedServices(ctx, conn)
	}
	var why string
	switch {
	case len(answers) == 0:
		why = "its gRPC reflection lists no discovery service, only " + listed(s.reflection)
	case len(answers) == len(xdsMethods()) && s.reflection != nil:
		why = "it answered Unimplemented for ADS and every per-type discovery service; its gRPC reflection lists " + listed(s.reflection)
	case len(answers) == len(xdsMethods()):
		why = "it answered Unimplemented for ADS and every per-type discovery service"
	default:
		why = "it answered Unimplemented for every discovery service its gRPC reflection lists (" + listed(s.reflection) + ")"
	}
	var more []string
	if name, ok := isFixture(ctx, conn); ok {
		more = append(more, fmt.Sprintf("it serves the fixture API (server %s): give this address as --fixture and the xDS port as --target", shown(name)))
	}
	if len(more) > 0 {
		why += "; " + strings.Join(more, "; ")
	}
	return fmt.Errorf("%s %w (%s)", addr, ErrNoXDS, why)
}

// isFixture reports whether the target answers the fixture API, and the
// server name its capabilities give: the commonest wrong --target is the
// fixture's port.
func isFixture(ctx context.Context, conn *grpc.ClientConn) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, reflectionWait)
	defer cancel()
	caps, err := fixture.FromConn(conn).Capabilities(ctx)
	if err != nil {
		return "", false
	}
	return wording.PeerText(caps.GetServer()), true
}

// shownMessage is a message the target caused, quoted (escaped) and
// bounded in length.
func shownMessage(m string) string {
	const max = 256
	if len(m) > max {
		return fmt.Sprintf("%q…", m[:max])
	}
	return fmt.Sprintf("%q", m)
}

// shown is a name the target gave, as it may be printed: as it is when
// it is a plain protobuf-style name, quoted (escaped) otherwise, and
// bounded in length.
func shown(name string) string {
	const max = 128
	cut := ""
	if len(name) > max {
		name, cut = name[:max], "…"
	}
	plain := name != ""
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/", r)) {
			plain = false
			break
		}
	}
	if plain {
		return name + cut
	}
	return fmt.Sprintf("%q", name) + cut
}
