package targets

import (
	"bytes"
	"fmt"
	"text/template"

	"github.com/xdsconform/xdsconform/internal/bootstrap"
)

// BootstrapVars are the variables of a --bootstrap-template: what one
// scenario's client must be told, for clients whose bootstrap is not the
// gRPC JSON the harness writes by default.
type BootstrapVars struct {
	// Server is the default management server, host:port.
	Server string
	// NodeID and Cluster identify the client.
	NodeID, Cluster string
	// Listener is the listener name the client asks for (old style), and
	// Target the channel target it is pointed at (xds:///NAME or
	// xds://AUTHORITY/NAME).
	Listener, Target string
	// Authorities are the bootstrap's authorities, in order (gRFC A47):
	// each with its server (empty: the default one) and listener
	// template (empty: the A47 default).
	Authorities []bootstrap.Authority
	// AuthorityServers maps each authority to its server, the default
	// server filled in: {{index .AuthorityServers "a.example"}}.
	AuthorityServers map[string]string
	// DefaultListenerTemplate is
	// client_default_listener_resource_name_template; empty when unset.
	DefaultListenerTemplate string
	// CSDS is the address the client should serve CSDS on.
	CSDS string
}

// BootstrapTemplateVars describes BootstrapVars for --help and the docs.
var BootstrapTemplateVars = map[string]string{
	"Server":                  "host:port of the default management server",
	"NodeID":                  "the node id the client must use",
	"Cluster":                 "the node cluster",
	"Listener":                "the listener name (old style) the scenario points the client at",
	"Target":                  "the channel target, xds:///NAME or xds://AUTHORITY/NAME",
	"Authorities":             "the authorities, in order: .Name, .ServerAddr (empty: the default server), .ListenerTemplate (empty: the gRFC A47 default)",
	"AuthorityServers":        "authority → server host:port, the default server filled in",
	"DefaultListenerTemplate": "client_default_listener_resource_name_template, empty when the scenario sets none",
	"CSDS":                    "host:port the client should serve CSDS on",
}

// BootstrapTemplateVarOrder is the order --help lists BootstrapTemplateVars in.
var BootstrapTemplateVarOrder = []string{"Server", "NodeID", "Cluster", "Listener", "Target", "Authorities", "AuthorityServers", "DefaultListenerTemplate", "CSDS"}

func parseBootstrapTemplate(text string) (*template.Template, error) {
	t, err := template.New("bootstrap").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("--bootstrap-template: %w", err)
	}
	return t, nil
}

// renderBootstrapTemplate renders text for spec's client.
func renderBootstrapTemplate(text string, spec LaunchSpec, csds string) ([]byte, error) {
	t, err := parseBootstrapTemplate(text)
	if err != nil {
		return nil, err
	}
	vars := BootstrapVars{Server: spec.ServerAddr, NodeID: spec.NodeID, Cluster: spec.Cluster, Listener: spec.Listener,
		Target: spec.ChannelTarget(), Authorities: spec.Authorities, AuthorityServers: map[string]string{},
		DefaultListenerTemplate: spec.DefaultListenerTemplate, CSDS: csds}
	for _, a := range spec.Authorities {
		vars.AuthorityServers[a.Name] = a.ServerAddr
		if a.ServerAddr == "" {
			vars.AuthorityServers[a.Name] = spec.ServerAddr
		}
	}
	var b bytes.Buffer
	if err := t.Execute(&b, vars); err != nil {
		return nil, fmt.Errorf("--bootstrap-template: %w", err)
	}
	return b.Bytes(), nil
}
