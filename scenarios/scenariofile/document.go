package scenariofile

// The types below are a scenario file's documents as Go values: Parse
// decodes into them after the schema accepted the document, and scaffold
// builds them and writes them with Marshal. Field order is the order
// Marshal writes keys in.

// APIVersion and Kind head every scenario document.
const (
	APIVersion = "xdsconform.io/v1alpha1"
	Kind       = "Scenario"
)

// Document is one scenario: a YAML document of a scenario file.
type Document struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	// ID is "<role>/<area>/<behaviour>"; the role says who the harness
	// plays (server: the target is a management server).
	ID    string `yaml:"id"`
	Title string `yaml:"title"`
	// Description is free text: what the scenario reproduces, how.
	Description string `yaml:"description,omitempty"`
	// Upstream is the URL of the bug report the scenario reproduces.
	Upstream string `yaml:"upstream,omitempty"`
	// Level is MUST, SHOULD or MAY; empty, the headline rule's.
	Level string `yaml:"level,omitempty"`
	// Requirements are the rules cited, headline first; empty, the rules
	// the steps name.
	Requirements []string `yaml:"requirements,omitempty,flow"`
	// Variants are variant names ("sotw-ads", ...); empty, all four.
	Variants []string `yaml:"variants,omitempty,flow"`
	// Needs are what the target must offer beyond what the steps imply.
	Needs []string `yaml:"needs,omitempty,flow"`
	// ServerSteps are the steps of a server-role scenario.
	ServerSteps []ServerStep `yaml:"-"`
	// ClientSteps are the steps of a client-role scenario.
	ClientSteps []ClientStep `yaml:"-"`
}

// Role is the document's role, the first segment of its ID.
func (d *Document) Role() string {
	for i, c := range d.ID {
		if c == '/' {
			return d.ID[:i]
		}
	}
	return d.ID
}

// ServerStep is one step of a server-role scenario (the harness plays the
// xDS client): exactly one of its fields is set.
type ServerStep struct {
	Set         *SetStep         `yaml:"set,omitempty,flow"`
	Delete      *DeleteStep      `yaml:"delete,omitempty,flow"`
	Subscribe   *SubscribeStep   `yaml:"subscribe,omitempty,flow"`
	Unsubscribe *UnsubscribeStep `yaml:"unsubscribe,omitempty,flow"`
	Wildcard    *WildcardStep    `yaml:"wildcard,omitempty,flow"`
	Ack         *AckStep         `yaml:"ack,omitempty,flow"`
	Nack        *NackStep        `yaml:"nack,omitempty,flow"`
	Expect      *ExpectStep      `yaml:"expect,omitempty,flow"`
	Quiet       *QuietStep       `yaml:"quiet,omitempty,flow"`
	Never       *QuietStep       `yaml:"never,omitempty,flow"`
	Settle      *TypeStep        `yaml:"settle,omitempty,flow"`
	Barrier     *BarrierStep     `yaml:"barrier,omitempty,flow"`
	Reconnect   *TypeStep        `yaml:"reconnect,omitempty,flow"`
}

// SetStep creates or replaces a resource through the fixture.
type SetStep struct {
	Type     string   `yaml:"type"`
	Name     string   `yaml:"name"`
	Revision int      `yaml:"revision"`
	TTL      string   `yaml:"ttl,omitempty"`
	Aliases  []string `yaml:"aliases,omitempty"`
	Rule     string   `yaml:"rule,omitempty"`
}

// DeleteStep deletes a resource through the fixture.
type DeleteStep struct {
	Type string `yaml:"type"`
	Name string `yaml:"name"`
	Rule string `yaml:"rule,omitempty"`
}

// SubscribeStep sends a request adding names; Nonce, when set, is the
// response_nonce instead of the latest (a reference "$LABEL.nonce" or a
// literal the target never sent).
type SubscribeStep struct {
	Type  string   `yaml:"type"`
	Names []string `yaml:"names,omitempty"`
	Nonce string   `yaml:"nonce,omitempty"`
	Rule  string   `yaml:"rule,omitempty"`
}

// UnsubscribeStep sends a request dropping names.
type UnsubscribeStep struct {
	Type  string   `yaml:"type"`
	Names []string `yaml:"names"`
	Rule  string   `yaml:"rule,omitempty"`
}

// WildcardStep sends the legacy wildcard request (naming nothing).
type WildcardStep struct {
	Type string `yaml:"type"`
	Rule string `yaml:"rule,omitempty"`
}

// AckStep ACKs the response labelled Of.
type AckStep struct {
	Of   string `yaml:"of"`
	Rule string `yaml:"rule,omitempty"`
}

// NackStep NACKs the response labelled Of, with an error_detail of Code
// and Message when given.
type NackStep struct {
	Of      string  `yaml:"of"`
	Code    *int32  `yaml:"code,omitempty"`
	Message *string `yaml:"message,omitempty"`
	Rule    string  `yaml:"rule,omitempty"`
}

// ExpectStep awaits a response of Type showing what it lists.
type ExpectStep struct {
	Type string `yaml:"type"`
	// As labels the response, for ack, nack and $AS.nonce.
	As string `yaml:"as,omitempty"`
	// Names must be carried, at any revision.
	Names []string `yaml:"names,omitempty"`
	// Resources must be carried at these revisions (name: revision).
	Resources map[string]int `yaml:"resources,omitempty"`
	// Removed must be listed in removed_resources (delta).
	Removed []string `yaml:"removed,omitempty"`
	// Absent must not be carried by the awaited response.
	Absent []string `yaml:"absent,omitempty"`
	// Exactly: the pair's resources in the awaited response are exactly
	// Names and Resources.
	Exactly bool `yaml:"exactly,omitempty"`
	// Next: the very next response must show it all.
	Next bool `yaml:"next,omitempty"`
	// Ack: ACK the awaited response.
	Ack  bool   `yaml:"ack,omitempty"`
	Rule string `yaml:"rule,omitempty"`
}

// QuietStep says no response of Type (carrying one of Names, when given)
// may come: for the quiet window (quiet) or until the pair ends (never).
type QuietStep struct {
	Type  string   `yaml:"type"`
	Names []string `yaml:"names,omitempty"`
	Why   string   `yaml:"why"`
	Rule  string   `yaml:"rule,omitempty"`
}

// TypeStep is a step about one type only (settle, reconnect).
type TypeStep struct {
	Type string `yaml:"type"`
}

// BarrierStep subscribes to an existing resource and awaits it, so every
// earlier request of the stream has been processed.
type BarrierStep struct {
	Type string `yaml:"type"`
	Name string `yaml:"name"`
}

// ClientStep is one step of a client-role scenario (the harness plays the
// management server): exactly one of its fields is set.
type ClientStep struct {
	Chain   *ChainStep         `yaml:"chain,omitempty,flow"`
	Serve   *ServeStep         `yaml:"serve,omitempty,flow"`
	Expect  *ExpectRequestStep `yaml:"expect,omitempty,flow"`
	Quiet   *QuietRequestStep  `yaml:"quiet,omitempty,flow"`
	Status  *StatusStep        `yaml:"status,omitempty,flow"`
	Never   *NeverStatusStep   `yaml:"never,omitempty,flow"`
	Restart *RestartStep       `yaml:"restart,omitempty,flow"`
}

// ChainStep serves the chain from the listener down to UpTo.
type ChainStep struct {
	UpTo string `yaml:"upTo"`
	Rule string `yaml:"rule,omitempty"`
}

// ServeStep sends a response.
type ServeStep struct {
	Type string `yaml:"type"`
	// Version is a literal, or $LABEL.version: a served response's.
	Version string `yaml:"version"`
	// Nonce, when set, is the response's nonce instead of a fresh one: a
	// literal, or $LABEL.nonce (a served response's, sent again).
	Nonce     string           `yaml:"nonce,omitempty"`
	Resources []ServedResource `yaml:"resources,omitempty"`
	Removed   []string         `yaml:"removed,omitempty"`
	As        string           `yaml:"as,omitempty"`
	Rule      string           `yaml:"rule,omitempty"`
}

// ServedResource is one resource of a ServeStep, built as the catalogue
// builds the chain's resources.
type ServedResource struct {
	Name     string   `yaml:"name"`
	Revision int      `yaml:"revision"`
	Invalid  bool     `yaml:"invalid,omitempty"`
	Route    string   `yaml:"route,omitempty"`
	Clusters []string `yaml:"clusters,omitempty"`
}

// ExpectRequestStep awaits a request of the client.
type ExpectRequestStep struct {
	Type    string   `yaml:"type"`
	Names   []string `yaml:"names,omitempty"`
	Dropped []string `yaml:"dropped,omitempty"`
	Ack     string   `yaml:"ack,omitempty"`
	Nack    string   `yaml:"nack,omitempty"`
	Next    bool     `yaml:"next,omitempty"`
	Rule    string   `yaml:"rule,omitempty"`
}

// QuietRequestStep says the client sends no request of Type for the quiet
// window.
type QuietRequestStep struct {
	Type string `yaml:"type"`
	Why  string `yaml:"why"`
	Rule string `yaml:"rule,omitempty"`
}

// StatusStep awaits the client's status view showing a resource in a state.
type StatusStep struct {
	Type    string `yaml:"type"`
	Name    string `yaml:"name"`
	State   string `yaml:"state,omitempty"`
	Version string `yaml:"version,omitempty"`
	Gone    bool   `yaml:"gone,omitempty"`
	Rule    string `yaml:"rule,omitempty"`
}

// NeverStatusStep says the client's status view never shows a resource in
// a state (or at another version), to the end of the pair.
type NeverStatusStep struct {
	Type    string `yaml:"type"`
	Name    string `yaml:"name"`
	State   string `yaml:"state,omitempty"`
	Version string `yaml:"version,omitempty"`
	Why     string `yaml:"why"`
	Rule    string `yaml:"rule,omitempty"`
}

// RestartStep ends every stream with Code (default UNAVAILABLE).
type RestartStep struct {
	Code string `yaml:"code,omitempty"`
}
