package scenariofile

import (
	"bytes"
	_ "embed" // the schema ships in the binary
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v3"
)

// Schema is scenario.schema.json, the JSON Schema (draft 2020-12) of one
// scenario document, as published next to this package: editors and CI
// can validate scenario files with it, and Parse validates every document
// against it before reading it.
//
//go:embed scenario.schema.json
var Schema []byte

// schemaURL is what the compiler knows the schema as: its $id.
const schemaURL = "https://xdsconform.io/schemas/scenario/v1alpha1.json"

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		return nil, fmt.Errorf("scenariofile: scenario.schema.json: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("scenariofile: scenario.schema.json: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("scenariofile: compiling scenario.schema.json: %w", err)
	}
	return s, nil
})

// validate checks one document's value against the schema and returns the
// most specific thing wrong, at its line.
func validate(v any, locs locations) *lineError {
	s, err := compiled()
	if err != nil {
		// The schema is embedded and compiled by the tests: a bad one is
		// a build defect, reported at the document's first line.
		return &lineError{line: 1, msg: err.Error()}
	}
	err = s.Validate(v)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return &lineError{line: 1, msg: err.Error()}
	}
	leaf := deepest(ve)
	return describe(leaf, v, locs)
}

// deepest is the leaf cause deepest in the document (the first of those
// equally deep): the most specific thing wrong.
func deepest(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	best := e
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			if len(e.InstanceLocation) > len(best.InstanceLocation) || len(best.Causes) > 0 {
				best = e
			}
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(e)
	return best
}

// describe says what e finds wrong, in the words of a scenario file, at
// the line of the node it is about.
func describe(e *jsonschema.ValidationError, doc any, locs locations) *lineError {
	ptr := pointer(e.InstanceLocation)
	at := locs[ptr]
	where := readable(e.InstanceLocation)
	isStep := len(e.InstanceLocation) == 2 && e.InstanceLocation[0] == "steps"
	prefix := ""
	if where != "" {
		prefix = where + ": "
	}
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		key := k.Properties[0]
		if n := locs[ptr+"/"+escapePointer(key)+"#key"]; n != nil {
			at = n
		}
		if isStep {
			return errAt(at, fmt.Sprintf("%sunknown step %q (a %s step is one of: %s)", prefix, key, roleOf(doc), strings.Join(stepKeys(roleOf(doc)), ", ")))
		}
		return errAt(at, fmt.Sprintf("%sunknown key %q", prefix, key))
	case *kind.MaxProperties:
		if isStep {
			return errAt(at, fmt.Sprintf("%sa step has exactly one action, this one has %d (%s)", prefix, k.Got, strings.Join(keysOf(at), ", ")))
		}
	case *kind.MinProperties:
		if isStep {
			return errAt(at, prefix+"an empty step: give one action")
		}
	case *kind.Required:
		return errAt(at, fmt.Sprintf("%smissing %s", prefix, quoteAll(k.Missing)))
	case *kind.Type:
		if slices.Contains(k.Want, "string") && at != nil && at.Kind == yaml.ScalarNode {
			// YAML reads 2, 1.0 and true as numbers and booleans: a
			// version or a name that looks like one is quoted.
			return errAt(at, fmt.Sprintf("%sgot %s, want string (quote it: %q)", prefix, k.Got, at.Value))
		}
	}
	return errAt(at, prefix+kindText(e))
}

// kindText is what the schema's validator says of e, in English: the
// error of its own output unit (the validator's default printer).
func kindText(e *jsonschema.ValidationError) string {
	if u := e.BasicOutput(); u != nil {
		if u.Error != nil {
			return u.Error.String()
		}
		for _, c := range u.Errors {
			if c.Error != nil {
				return c.Error.String()
			}
		}
	}
	return fmt.Sprint(e.ErrorKind)
}

// roleOf is the role the document's id names, "server" when it names none
// the schema accepts (the schema then checks server steps).
func roleOf(doc any) string {
	if m, ok := doc.(map[string]any); ok {
		if id, ok := m["id"].(string); ok && strings.HasPrefix(id, "client/") {
			return "client"
		}
	}
	return "server"
}

// stepKeys lists the action keys of a role's steps, in the order the
// reference documents them.
func stepKeys(role string) []string {
	t := reflect.TypeFor[ServerStep]()
	if role == "client" {
		t = reflect.TypeFor[ClientStep]()
	}
	var keys []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		keys = append(keys, name)
	}
	return keys
}

// keysOf lists a mapping node's keys.
func keysOf(n *yaml.Node) []string {
	var keys []string
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i].Value)
	}
	return keys
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	slices.Sort(q)
	return strings.Join(q, ", ")
}
