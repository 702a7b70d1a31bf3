// Package scaffold turns a transcript — a recording, or a failing pair's
// transcript taken out of a JSON report — into a scenario file a person
// then trims: what one side did becomes steps the harness takes, what the
// other side did becomes expectations, and nonce and version literals
// become references to the messages they came from, so the file runs
// against any implementation of the side under test.
package scaffold

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/scenarios/scenariofile"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// Roles a scaffold can be made for: the side under test.
const (
	// AgainstServer: the recorded server is the target; the harness plays
	// the client (a server-role scenario).
	AgainstServer = "server"
	// AgainstClient: the recorded client is the target; the harness plays
	// the management server (a client-role scenario).
	AgainstClient = "client"
)

// maxSteps is the most steps a scenario file's schema takes.
const maxSteps = 1000

// maxMessages is the most messages a transcript may hold to be
// scaffolded: each makes about one step (a request a subscribe, ack or
// nack, a response an expect), so four times maxSteps leaves room for
// messages that make none, and a transcript past it is refused before
// its steps are built.
const maxMessages = 4 * maxSteps

// Options say what to make of a transcript.
type Options struct {
	// Against is the side under test, AgainstServer or AgainstClient;
	// empty, the side the transcript was not taken from (a server-suite
	// pair's transcript, taken from the client's side, scaffolds a
	// server-role scenario).
	Against string
	// ID is the scenario's ID; empty, one is made up from the source.
	ID string
	// Source says in words where the transcript comes from, for the
	// file's header; empty, the transcript file's own Source.
	Source string
	// Requirements are the rules the recorded scenario cited, if any:
	// named in the header for the person who trims the file.
	Requirements []string
}

// Result is a scaffolded scenario file.
type Result struct {
	// Doc is the scenario.
	Doc *scenariofile.Document
	// Notes say what the scaffold generalised or left out.
	Notes []string
}

// File renders r as a scenario file: a header comment saying where it
// comes from and what was generalised, then the document.
func (r *Result) File() ([]byte, error) {
	body, err := scenariofile.Marshal(r.Doc)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("# Scaffolded by xdsconform scaffold: trim it to the behaviour the bug is about,\n")
	b.WriteString("# name the rule the decisive step checks (rule:), and run it with\n")
	fmt.Fprintf(&b, "#   xdsconform %s --target ... --scenario-file FILE\n", r.Doc.Role())
	b.WriteString("#\n")
	for _, n := range r.Notes {
		for i, line := range wrap(n, 76) {
			if i == 0 {
				b.WriteString("# - " + line + "\n")
			} else {
				b.WriteString("#   " + line + "\n")
			}
		}
	}
	b.WriteString("\n")
	b.Write(body)
	return []byte(b.String()), nil
}

// wrap cuts s into lines of at most width runes at spaces.
func wrap(s string, width int) []string {
	var lines []string
	var line string
	for _, w := range strings.Fields(s) {
		if line != "" && len([]rune(line))+1+len([]rune(w)) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

// Scaffold makes a scenario of f, as opts say. The result is checked: it
// validates against the schema and compiles.
func Scaffold(f *transcript.File, opts Options) (*Result, error) {
	against := opts.Against
	switch {
	case against == "" && f.Side == transcript.SideClient:
		against = AgainstServer
	case against == "" && f.Side == transcript.SideServer:
		against = AgainstClient
	case against != AgainstServer && against != AgainstClient:
		return nil, fmt.Errorf("scaffold: against %q: want server or client", against)
	}
	var msgs []message
	folded, cut, partial := 0, false, false
	for _, e := range f.Entries {
		if e.Direction == transcript.Folded {
			folded += e.Folded
			continue
		}
		if e.Direction == transcript.Event && (strings.Contains(e.Note, " elided (") || strings.Contains(e.Note, "not kept for the scenario")) {
			cut = true
		}
		if e.Direction != transcript.Event && e.Note != "" {
			partial = true // the rendering left part of the message out
		}
		m, ok, err := readMessage(e, f.Side)
		if err != nil {
			return nil, fmt.Errorf("scaffold: %w", err)
		}
		if ok {
			msgs = append(msgs, m)
		}
		if len(msgs) > maxMessages {
			// Checked as the messages are read, before the steps are
			// built: both take several times what the entries do, and
			// the steps could not be written anyway.
			return nil, fmt.Errorf("scaffold: the transcript holds more than %d messages, more than the %d steps a scenario holds could replay (each message makes about one step): record (or select) less, or cut the transcript file", maxMessages, maxSteps)
		}
	}
	if len(msgs) == 0 {
		return nil, errors.New("scaffold: the transcript holds no discovery request or response")
	}
	msgs = causal(msgs)
	variant, err := variantOf(f, msgs)
	if err != nil {
		return nil, err
	}
	b := &builder{variant: variant, prefix: pairPrefix(msgs)}
	source := opts.Source
	if source == "" {
		source = f.Source
	}
	if source != "" {
		b.note("Scaffolded from %s.", source)
	}
	if f.Scenario != "" {
		cites := ""
		if len(opts.Requirements) > 0 {
			cites = ", which cites " + strings.Join(opts.Requirements, ", ")
		}
		b.note("The transcript is of scenario %s[%s]%s.", f.Scenario, variant, cites)
	}
	if folded > 0 {
		b.note("The transcript had %d repeated entries folded away; the scaffold replays the first and last cycle only.", folded)
	}
	if cut {
		b.note("The transcript had entries left out (its size bound); the scaffold replays those it kept, so steps around the gap may need care.")
	}
	if partial {
		b.note("Some messages were rendered in part (their size bound): a resource left out of the rendering is not in the scaffold.")
	}
	doc := &scenariofile.Document{APIVersion: scenariofile.APIVersion, Kind: scenariofile.Kind, Variants: []string{variant.String()}}
	if against == AgainstServer {
		doc.ServerSteps = b.server(msgs)
	} else {
		doc.ClientSteps = b.client(msgs)
	}
	doc.ID = opts.ID
	if doc.ID == "" {
		doc.ID = defaultID(against, f)
	}
	doc.Title = "Scaffolded: the " + against + " behaves as it did when recorded"
	doc.Description = "Scaffolded from a transcript; say here what the scenario shows."
	if n := len(doc.ServerSteps) + len(doc.ClientSteps); n > maxSteps {
		return nil, fmt.Errorf("scaffold: the transcript makes %d steps, more than the %d a scenario holds: record (or select) less, or cut the transcript file", n, maxSteps)
	}
	if b.rules() == 0 {
		return nil, fmt.Errorf("scaffold: the transcript holds nothing the %s did that a step could expect", against)
	}
	res := &Result{Doc: doc, Notes: b.notes}
	text, err := res.File()
	if err != nil {
		return nil, err
	}
	if _, err := scenariofile.Parse(text, "scaffold"); err != nil {
		return nil, fmt.Errorf("scaffold: the scenario made of the transcript does not load (a bug of the scaffold): %w", err)
	}
	return res, nil
}

// defaultID makes an ID of the recorded scenario's, or of the role alone.
func defaultID(against string, f *transcript.File) string {
	id := against + "/scaffold/recorded"
	if f.Scenario != "" {
		parts := strings.Split(f.Scenario, "/")
		if len(parts) == 3 && parts[0] == against {
			id = against + "/scaffold/" + parts[1] + "-" + parts[2]
		}
	}
	return id
}

// variantOf is the transcript's variant: the file's, else what its
// messages and streams show.
func variantOf(f *transcript.File, msgs []message) (wire.Variant, error) {
	if f.Variant != "" {
		v, err := wire.ParseVariant(f.Variant)
		if err != nil || v.IsREST() {
			return wire.Variant{}, fmt.Errorf("scaffold: variant %q: a scaffold replays gRPC streams (sotw-ads, sotw-pertype, delta-ads, delta-pertype)", f.Variant)
		}
		return v, nil
	}
	v := wire.Variant{Protocol: wire.SotW, Transport: wire.PerType}
	if msgs[0].delta {
		v.Protocol = wire.Delta
	}
	if strings.HasPrefix(msgs[0].stream, "ads") {
		v.Transport = wire.ADS
	}
	return v, nil
}

// nodePattern is the node id the harness gives a pair, whose hash also
// prefixes the pair's resource names (engine.T.Name).
var nodePattern = regexp.MustCompile(`^xdsconform-([0-9a-f]{8})$`)

// pairPrefix is the prefix of the pair's resource names when the
// transcript is of a harness pair, else "": its names are then the
// recorded implementation's, used as base names as they are.
func pairPrefix(msgs []message) string {
	for _, m := range msgs {
		if sm := nodePattern.FindStringSubmatch(m.nodeID); sm != nil {
			return "x" + sm[1] + "-"
		}
	}
	return ""
}

// builder accumulates what a scaffold says.
type builder struct {
	variant wire.Variant
	prefix  string
	notes   []string
	// checking counts the steps that check something by default.
	checking int
	noted    map[string]bool
}

func (b *builder) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if b.noted == nil {
		b.noted = map[string]bool{}
	}
	if !b.noted[n] {
		b.noted[n] = true
		b.notes = append(b.notes, n)
	}
}

func (b *builder) rules() int { return b.checking }

// base is the base name of a recorded name: the pair's prefix taken off a
// harness pair's name; ok is false for a name of another pair (a wildcard
// response on a shared server carries them).
func (b *builder) base(name string) (string, bool) {
	if name == "*" || b.prefix == "" {
		return name, true
	}
	if rest, ok := strings.CutPrefix(name, b.prefix); ok && rest != "" {
		return rest, true
	}
	return "", false
}

// bases maps names to base names, leaving out other pairs'.
func (b *builder) bases(names []string) []string {
	var out []string
	for _, n := range names {
		if base, ok := b.base(n); ok && !slices.Contains(out, base) {
			out = append(out, base)
		}
	}
	return out
}

// typeOf is the short name of a type URL, ok false for one the scaffold
// cannot replay.
func typeOf(url string) (wire.Type, bool) {
	t, ok := wire.TypeByURL(url)
	if !ok || !slices.ContainsFunc(wire.AllTypes, func(u wire.Type) bool { return u.URL == t.URL }) {
		return wire.Type{}, false
	}
	return t, true
}

// Pair is the transcript of one pair of a JSON report, as a transcript
// file: what `scaffold --report --pair` reads.
func Pair(run results.Run, pair, reportPath string) (*transcript.File, []string, error) {
	id, variant, ok := strings.Cut(strings.TrimSuffix(pair, "]"), "[")
	if !ok || !strings.HasSuffix(pair, "]") {
		return nil, nil, fmt.Errorf("--pair %q: want ID[variant], as the report prints it", pair)
	}
	for _, r := range run.Results {
		if r.ID != id || r.Variant != variant {
			continue
		}
		if len(r.Transcript) == 0 {
			return nil, nil, fmt.Errorf("--pair %s: the report keeps no transcript of it (the run's --transcripts kept only failing pairs, or none)", pair)
		}
		side := transcript.SideClient
		if strings.HasPrefix(id, "client/") {
			side = transcript.SideServer
		}
		return &transcript.File{Format: transcript.FileFormat, Recorded: run.Started, HarnessVersion: run.HarnessVersion, Side: side, Variant: variant,
			Source:   fmt.Sprintf("pair %s of report %s (%s against %s)", pair, reportPath, r.Outcome, run.Target),
			Scenario: id, Entries: r.Transcript}, r.Requirements, nil
	}
	return nil, nil, fmt.Errorf("--pair %s: no such pair in the report", pair)
}
