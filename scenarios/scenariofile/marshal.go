package scenariofile

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// out is a Document as written: its steps under steps:, whichever role.
type out struct {
	APIVersion   string   `yaml:"apiVersion"`
	Kind         string   `yaml:"kind"`
	ID           string   `yaml:"id"`
	Title        string   `yaml:"title"`
	Description  string   `yaml:"description,omitempty"`
	Upstream     string   `yaml:"upstream,omitempty"`
	Level        string   `yaml:"level,omitempty"`
	Requirements []string `yaml:"requirements,omitempty,flow"`
	Variants     []string `yaml:"variants,omitempty,flow"`
	Needs        []string `yaml:"needs,omitempty,flow"`
	Steps        any      `yaml:"steps"`
}

// Marshal writes documents as one scenario file, separated by ---. It
// does not check them: Parse (or Documents) on the result does.
func Marshal(docs ...*Document) ([]byte, error) {
	var b bytes.Buffer
	for i, d := range docs {
		o := out{APIVersion: d.APIVersion, Kind: d.Kind, ID: d.ID, Title: d.Title, Description: d.Description,
			Upstream: d.Upstream, Level: d.Level, Requirements: d.Requirements, Variants: d.Variants, Needs: d.Needs}
		if o.APIVersion == "" {
			o.APIVersion = APIVersion
		}
		if o.Kind == "" {
			o.Kind = Kind
		}
		if d.Role() == "client" {
			o.Steps = d.ClientSteps
		} else {
			o.Steps = d.ServerSteps
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(o); err != nil {
			return nil, fmt.Errorf("scenario file: encode %s: %w", d.ID, err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("scenario file: encode %s: %w", d.ID, err)
		}
	}
	return b.Bytes(), nil
}
