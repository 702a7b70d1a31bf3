package scenariofile

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// compiler turns one decoded document into a scenario, checking on the way
// what the schema cannot: rules in the catalogue, labels defined before
// use, steps the variants can take.
type compiler struct {
	file string
	d    *decoded
	doc  *Document

	variants    []wire.Variant
	sotw, delta bool

	needs []engine.Need
	// named are the rules the steps name (rule:), in step order; defaults
	// the rules the checking steps check when they name none.
	named, defaults []string
	// labels are the labels defined so far, with the type of what they
	// label.
	labels map[string]wire.Type
}

func compile(d *decoded, file string) (*engine.Scenario, error) {
	c := &compiler{file: file, d: d, doc: d.doc, labels: map[string]wire.Type{}}
	if err := c.readVariants(); err != nil {
		return nil, err
	}
	var run func(*engine.T)
	var err error
	if c.doc.Role() == "client" {
		run, err = c.client()
	} else {
		run, err = c.server()
	}
	if err != nil {
		return nil, err
	}
	for i, n := range c.doc.Needs {
		if err := c.need(fmt.Sprintf("/needs/%d", i), n); err != nil {
			return nil, err
		}
	}
	s := &engine.Scenario{ID: c.doc.ID, Title: c.doc.Title, Variants: c.variants, Needs: c.needs, Run: run}
	if err := c.citations(s); err != nil {
		return nil, err
	}
	if err := engine.Validate([]*engine.Scenario{s}); err != nil {
		return nil, c.errf("/id", "%v", err)
	}
	return s, nil
}

// errf is an error at the node at ptr (or the nearest one enclosing it).
func (c *compiler) errf(ptr, format string, args ...any) error {
	return &Error{File: c.file, Line: c.d.line(ptr), Msg: fmt.Sprintf(format, args...)}
}

// readVariants reads variants:, defaulting to the four gRPC variants.
func (c *compiler) readVariants() error {
	if len(c.doc.Variants) == 0 {
		c.variants = slices.Clone(wire.AllVariants)
	}
	for i, name := range c.doc.Variants {
		v, err := wire.ParseVariant(name)
		if err != nil || v.IsREST() {
			return c.errf(fmt.Sprintf("/variants/%d", i), "unknown variant %q (want sotw-ads, sotw-pertype, delta-ads or delta-pertype)", name)
		}
		c.variants = append(c.variants, v)
	}
	for _, v := range c.variants {
		c.sotw = c.sotw || !v.IsDelta()
		c.delta = c.delta || v.IsDelta()
	}
	return nil
}

// citations fills in the scenario's requirements and level: those given,
// else the rules the steps name, else those the checking steps check by
// default; the level is the headline rule's.
func (c *compiler) citations(s *engine.Scenario) error {
	for i, id := range c.doc.Requirements {
		if err := c.rule(fmt.Sprintf("/requirements/%d", i), id, false); err != nil {
			return err
		}
	}
	switch {
	case len(c.doc.Requirements) > 0:
		s.Requirements = slices.Clone(c.doc.Requirements)
	case len(c.named) > 0:
		s.Requirements = c.named
	case len(c.defaults) > 0:
		s.Requirements = c.defaults
	default:
		return c.errf("/steps#key", "no step checks a rule: name the rule a step checks (rule:) or list requirements:")
	}
	head, _ := requirements.Lookup(s.Requirements[0])
	s.Level = results.Level(head.Strength)
	if c.doc.Level != "" && c.doc.Level != head.Strength {
		return c.errf("/level", "level %s, but the headline rule %s is %s (the level is the headline rule's)", c.doc.Level, head.ID, head.Strength)
	}
	return nil
}

// rule checks that id is a rule of the catalogue that binds the side the
// document's role observes; named adds it to the rules the steps name.
func (c *compiler) rule(ptr, id string, named bool) error {
	if id == "" {
		return nil
	}
	r, ok := requirements.Lookup(id)
	if !ok {
		return c.errf(ptr, "unknown rule %q: it is not in the requirements catalogue (xdsconform explain lists them)", id)
	}
	role := c.doc.Role()
	if r.Binds != role && r.Binds != "both" {
		return c.errf(ptr, "rule %s binds the %s, but a %s-role scenario observes the %s", id, r.Binds, role, role)
	}
	if named && !slices.Contains(c.named, id) {
		c.named = append(c.named, id)
	}
	return nil
}

// checks records a rule a checking step checks when it names none.
func (c *compiler) checks(id string) {
	if id != "" && !slices.Contains(c.defaults, id) {
		c.defaults = append(c.defaults, id)
	}
}

// addNeed adds a need once.
func (c *compiler) addNeed(n engine.Need) {
	if !slices.Contains(c.needs, n) {
		c.needs = append(c.needs, n)
	}
}

// serverNeeds and clientNeeds are the needs a document may list, beyond
// the type:XXX, status:STATE and client-feature:F families.
var (
	serverNeeds = []engine.Need{targets.NeedFixture, targets.NeedLegacyWildcard, targets.NeedExplicitWildcard, targets.NeedChosenNames,
		targets.NeedTTL, targets.NeedAliases, targets.NeedBatch, targets.NeedEnvoyWarming, targets.NeedXdstp, targets.NeedListCollections,
		targets.NeedGlobCollections, targets.NeedRedirects, targets.NeedDynamicParameters, targets.NeedResourceErrors}
	clientNeeds = []engine.Need{targets.NeedObserver, targets.NeedFreshClient, targets.NeedGRPCProfile}
)

// need checks a need listed in needs: and adds it.
func (c *compiler) need(ptr, name string) error {
	n := engine.Need(name)
	known := serverNeeds
	if c.doc.Role() == "client" {
		known = clientNeeds
	}
	switch family, arg, _ := strings.Cut(name, ":"); {
	case slices.Contains(known, n):
	case c.doc.Role() == "server" && family == "type":
		t, ok := wire.TypeByShort(arg)
		if !ok {
			return c.errf(ptr, "need %q: unknown type %q", name, arg)
		}
		n = targets.NeedType(t)
	case c.doc.Role() == "client" && family == "status":
		if !slices.Contains(targets.StatusStates, observer.State(arg)) {
			return c.errf(ptr, "need %q: a status view can lack %s only", name, joinStates(targets.StatusStates))
		}
	case c.doc.Role() == "client" && family == "client-feature":
		if !slices.Contains(targets.ClientFeatures, arg) {
			return c.errf(ptr, "need %q: unknown client feature (want one of %s)", name, strings.Join(targets.ClientFeatures, ", "))
		}
	default:
		return c.errf(ptr, "unknown need %q for a %s-role scenario (want one of %s)", name, c.doc.Role(), needList(c.doc.Role(), known))
	}
	c.addNeed(n)
	return nil
}

func needList(role string, known []engine.Need) string {
	var out []string
	for _, n := range known {
		out = append(out, string(n))
	}
	if role == "server" {
		out = append(out, "type:TYPE")
	} else {
		out = append(out, "status:STATE", "client-feature:FEATURE")
	}
	return strings.Join(out, ", ")
}

func joinStates(ss []observer.State) string {
	var out []string
	for _, s := range ss {
		out = append(out, string(s))
	}
	return strings.Join(out, ", ")
}

// typeOf reads a type's short name (the schema lists them) and checks the
// variants can carry it.
func (c *compiler) typeOf(ptr, short string) (wire.Type, error) {
	t, ok := wire.TypeByShort(short)
	if !ok {
		return wire.Type{}, c.errf(ptr, "unknown type %q", short)
	}
	if c.sotw && !t.Speaks(wire.SotW) {
		return wire.Type{}, c.errf(ptr, "%s is carried over delta only: list only delta variants (variants: [delta-ads, delta-pertype])", t.Short)
	}
	return t, nil
}

// define records label as labelling a message of t.
func (c *compiler) define(ptr, label string, t wire.Type) error {
	if label == "" {
		return nil
	}
	if _, dup := c.labels[label]; dup {
		return c.errf(ptr, "label %q is defined twice", label)
	}
	c.labels[label] = t
	return nil
}

// use checks that label was defined by an earlier step.
func (c *compiler) use(ptr, label string) (wire.Type, error) {
	t, ok := c.labels[label]
	if !ok {
		return wire.Type{}, c.errf(ptr, "undefined label %q: label a response of an earlier step with as: %s", label, label)
	}
	return t, nil
}

// refPattern is a reference to a field of a labelled message.
var refPattern = regexp.MustCompile(`^\$([A-Za-z][A-Za-z0-9_-]*)\.([a-z]+)$`)

// ref reads a value that may be a reference $LABEL.FIELD (FIELD one of
// fields); label is "" for a literal. A value starting with $ must be a
// well-formed reference.
func (c *compiler) ref(ptr, v string, fields ...string) (label, field string, err error) {
	if !strings.HasPrefix(v, "$") {
		return "", "", nil
	}
	m := refPattern.FindStringSubmatch(v)
	if m == nil || !slices.Contains(fields, m[2]) {
		return "", "", c.errf(ptr, "%q is not a reference: want $LABEL.%s", v, strings.Join(fields, " or $LABEL."))
	}
	if _, err := c.use(ptr, m[1]); err != nil {
		return "", "", err
	}
	return m[1], m[2], nil
}

// stepPtr is the pointer of step i's action key field.
func stepPtr(i int, action, field string) string {
	p := "/steps/" + strconv.Itoa(i) + "/" + action
	if field != "" {
		p += "/" + field
	}
	return p
}

// fixtureTypeNeed is the need of a step that drives type t through the
// fixture.
func (c *compiler) usesType(t wire.Type, viaFixture bool) {
	if viaFixture {
		c.addNeed(targets.NeedFixture)
	}
	c.addNeed(targets.NeedType(t))
}
