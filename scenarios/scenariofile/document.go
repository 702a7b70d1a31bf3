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
	// Set creates or replaces a resource through the fixture.
	Set *SetStep `yaml:"set,omitempty,flow"`
	// Delete deletes a resource through the fixture.
	Delete *DeleteStep `yaml:"delete,omitempty,flow"`
	// Subscribe sends a request adding names.
	Subscribe *SubscribeStep `yaml:"subscribe,omitempty,flow"`
	// Unsubscribe sends a request dropping names.
	Unsubscribe *UnsubscribeStep `yaml:"unsubscribe,omitempty,flow"`
	// Wildcard sends the legacy wildcard request.
	Wildcard *WildcardStep `yaml:"wildcard,omitempty,flow"`
	// Ack ACKs a labelled response.
	Ack *AckStep `yaml:"ack,omitempty,flow"`
	// Nack NACKs a labelled response.
	Nack *NackStep `yaml:"nack,omitempty,flow"`
	// Expect awaits a response.
	Expect *ExpectStep `yaml:"expect,omitempty,flow"`
	// Quiet checks that no response comes for the quiet window.
	Quiet *QuietStep `yaml:"quiet,omitempty,flow"`
	// Never checks that no response comes until the pair ends.
	Never *QuietStep `yaml:"never,omitempty,flow"`
	// Settle waits the quiet window, ACKing what comes.
	Settle *TypeStep `yaml:"settle,omitempty,flow"`
	// Barrier subscribes to an existing resource and awaits it.
	Barrier *BarrierStep `yaml:"barrier,omitempty,flow"`
	// Reconnect ends the stream carrying a type.
	Reconnect *TypeStep `yaml:"reconnect,omitempty,flow"`
}

// SetStep creates or replaces a resource through the fixture.
type SetStep struct {
	// Type is the resource type, by its short name (EDS).
	Type string `yaml:"type"`
	// Name is a base name.
	Name string `yaml:"name"`
	// Revision is the revision set.
	Revision int `yaml:"revision"`
	// TTL, a duration (30s), serves the resource with a TTL.
	TTL string `yaml:"ttl,omitempty"`
	// Aliases are the resource's delta aliases.
	Aliases []string `yaml:"aliases,omitempty"`
	// Rule is the rule the step checks, if it names one.
	Rule string `yaml:"rule,omitempty"`
}

// DeleteStep deletes a resource through the fixture.
type DeleteStep struct {
	// Type is the resource type, by its short name (EDS).
	Type string `yaml:"type"`
	// Name is a base name.
	Name string `yaml:"name"`
	// Rule is the rule the step checks, if it names one.
	Rule string `yaml:"rule,omitempty"`
}

// SubscribeStep sends a request adding names; Nonce, when set, is the
// response_nonce instead of the latest (a reference "$LABEL.nonce" or a
// literal the target never sent).
type SubscribeStep struct {
	// Type is the resource type, by its short name (EDS).
	Type string `yaml:"type"`
	// Names are the base names added ("*" the explicit wildcard).
	Names []string `yaml:"names,omitempty"`
	// Nonce replaces the latest nonce.
	Nonce string `yaml:"nonce,omitempty"`
	// Rule is the rule the step checks, if it names one.
	Rule string `yaml:"rule,omitempty"`
}

// UnsubscribeStep sends a request dropping names.
type UnsubscribeStep struct {
	// Type is the resource type, by its short name (EDS).
	Type string `yaml:"type"`
	// Names are the base names dropped.
	Names []string `yaml:"names"`
	// Rule is the rule the step checks, if it names one.
	Rule string `yaml:"rule,omitempty"`
}

// WildcardStep sends the legacy wildcard request (naming nothing).
type WildcardStep struct {
	// Type is the resource type, by its short name (EDS).
	Type string `yaml:"type"`
	// Rule is the rule the step checks, if it names one.
	Rule string `yaml:"rule,omitempty"`
}

// AckStep ACKs the response labelled Of.
type AckStep struct {
	// Of is the label of the response.
	Of string `yaml:"of"`
	// Rule is the rule the step checks, if it names one.
	Rule string `yaml:"rule,omitempty"`
}

// NackStep NACKs the response labelled Of, with an error_detail of Code
// and Message when given.
type NackStep struct {
	// Of is the label of the response.
	Of string `yaml:"of"`
	// Code is the error_detail's code.
	Code *int32 `yaml:"code,omitempty"`
	// Message is the error_detail's message.
	Message *string `yaml:"message,omitempty"`
	// Rule is the rule the step checks, if it names one.
	Rule string `yaml:"rule,omitempty"`
}

// ExpectStep awaits a response of Type showing what it lists.
type ExpectStep struct {
	// Type is the response's type.
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
	Ack bool `yaml:"ack,omitempty"`
	// Rule is the rule the step checks, if it names one.
	Rule string `yaml:"rule,omitempty"`
}

// QuietStep says no response of Type (carrying one of Names, when given)
// may come: for the quiet window (quiet) or until the pair ends (never).
type QuietStep struct {
	// Type is the resource type, by its short name (EDS).
	Type string `yaml:"type"`
	// Names, when given, are the only names a response must not carry.
	Names []string `yaml:"names,omitempty"`
	// Why says what a response would mean.
	Why string `yaml:"why"`
	// Rule is the rule the step checks, if it names one.
	Rule string `yaml:"rule,omitempty"`
}

// TypeStep is a step about one type only (settle, reconnect).
type TypeStep struct {
	// Type is the resource type, by its short name (EDS).
	Type string `yaml:"type"`
}

// BarrierStep subscribes to an existing resource and awaits it, so every
// earlier request of the stream has been processed.
type BarrierStep struct {
	// Type is the resource type, by its short name (EDS).
	Type string `yaml:"type"`
	// Name is a base name.
	Name string `yaml:"name"`
}

// ClientStep is one step of a client-role scenario (the harness plays the
// management server): exactly one of its fields is set.
type ClientStep struct {
	// Chain serves the chain down to a type.
	Chain *ChainStep `yaml:"chain,omitempty,flow"`
	// Serve sends a response.
	Serve *ServeStep `yaml:"serve,omitempty,flow"`
	// Expect awaits a request.
	Expect *ExpectRequestStep `yaml:"expect,omitempty,flow"`
	// Quiet checks that no request comes for the quiet window.
	Quiet *QuietRequestStep `yaml:"quiet,omitempty,flow"`
	// Status awaits the status view showing a state.
	Status *StatusStep `yaml:"status,omitempty,flow"`
	// Never checks that the status view never shows a state.
	Never *NeverStatusStep `yaml:"never,omitempty,flow"`
	// Restart ends every stream.
	Restart *RestartStep `yaml:"restart,omitempty,flow"`
}

// ChainStep serves the chain from the listener down to UpTo.
type ChainStep struct {
	// UpTo is the last type served.
	UpTo string `yaml:"upTo"`
	// Rule is the rule the step checks, if it names one.
	Rule string `yaml:"rule,omitempty"`
}

// ServeStep sends a response.
type ServeStep struct {
	// Type is the response's type.
	Type string `yaml:"type"`
	// Version is a literal, or $LABEL.version: a served response's.
	Version string `yaml:"version"`
	// Nonce, when set, is the response's nonce instead of a fresh one: a
	// literal, or $LABEL.nonce (a served response's, sent again).
	Nonce string `yaml:"nonce,omitempty"`
	// Resources are the resources carried.
	Resources []ServedResource `yaml:"resources,omitempty"`
	// Removed are the base names removed (delta).
	Removed []string `yaml:"removed,omitempty"`
	// As labels the response.
	As string `yaml:"as,omitempty"`
	// Rule is the rule the step checks, if it names one.
	Rule string `yaml:"rule,omitempty"`
}

// ServedResource is one resource of a ServeStep, built as the catalogue
// builds the chain's resources.
type ServedResource struct {
	// Name is a base name.
	Name string `yaml:"name"`
	// Revision is the revision built.
	Revision int `yaml:"revision"`
	// Invalid builds a listener or cluster the client must reject.
	Invalid bool `yaml:"invalid,omitempty"`
	// Route is the route a listener uses.
	Route string `yaml:"route,omitempty"`
	// Clusters are the clusters a route uses.
	Clusters []string `yaml:"clusters,omitempty"`
}

// ExpectRequestStep awaits a request of the client.
type ExpectRequestStep struct {
	// Type is the request's type.
	Type string `yaml:"type"`
	// Names are the names the request must ask for, exactly.
	Names []string `yaml:"names,omitempty"`
	// Dropped are names the request must drop.
	Dropped []string `yaml:"dropped,omitempty"`
	// Ack is the label of the response the request must ACK.
	Ack string `yaml:"ack,omitempty"`
	// Nack is the label of the response the request must NACK.
	Nack string `yaml:"nack,omitempty"`
	// Next: the very next request must ask for Names.
	Next bool `yaml:"next,omitempty"`
	// Rule is the rule the step checks, if it names one.
	Rule string `yaml:"rule,omitempty"`
}

// QuietRequestStep says the client sends no request of Type for the quiet
// window.
type QuietRequestStep struct {
	// Type is the request type that must not come.
	Type string `yaml:"type"`
	// Why says what a request would mean.
	Why string `yaml:"why"`
	// Rule is the rule the step checks, if it names one.
	Rule string `yaml:"rule,omitempty"`
}

// StatusStep awaits the client's status view showing a resource in a state.
type StatusStep struct {
	// Type is the resource type, by its short name (EDS).
	Type string `yaml:"type"`
	// Name is a base name.
	Name string `yaml:"name"`
	// State is the state shown.
	State string `yaml:"state,omitempty"`
	// Version is the version shown: a literal or $LABEL.version.
	Version string `yaml:"version,omitempty"`
	// Gone: the view no longer holds the resource.
	Gone bool `yaml:"gone,omitempty"`
	// Rule is the rule the step checks, if it names one.
	Rule string `yaml:"rule,omitempty"`
}

// NeverStatusStep says the client's status view never shows a resource in
// a state (or at another version), to the end of the pair.
type NeverStatusStep struct {
	// Type is the resource type, by its short name (EDS).
	Type string `yaml:"type"`
	// Name is a base name.
	Name string `yaml:"name"`
	// State is the state never shown.
	State string `yaml:"state,omitempty"`
	// Version is the only version the view may show.
	Version string `yaml:"version,omitempty"`
	// Why says what showing it would mean.
	Why string `yaml:"why"`
	// Rule is the rule the step checks, if it names one.
	Rule string `yaml:"rule,omitempty"`
}

// RestartStep ends every stream with Code (default UNAVAILABLE).
type RestartStep struct {
	// Code is the gRPC code the streams end with (UNAVAILABLE).
	Code string `yaml:"code,omitempty"`
}
