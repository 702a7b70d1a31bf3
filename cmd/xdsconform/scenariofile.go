package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/scenarios/scenariofile"
)

// scenarioFiles is the --scenario-file flag of server and client: files
// whose scenarios run instead of the built-in catalogue.
type scenarioFiles struct {
	paths []string
}

func (f *scenarioFiles) register(c *cobra.Command) {
	c.Flags().StringArrayVar(&f.paths, "scenario-file", nil,
		"the scenarios of this scenario file (YAML, docs/scenario-files.md) instead of the built-in catalogue (repeatable; --run, --variant, --level still select among them)")
	_ = c.MarkFlagFilename("scenario-file", "yaml", "yml")
}

// catalogue is the catalogue a suite of role runs: the files' scenarios
// when files were given, else the built-in one. A file that cannot be
// read or run, or holds a scenario of the other role, is a usage error of
// one line pointing at the file and line. Role "" takes both roles (list).
func (f *scenarioFiles) catalogue(role string, builtin func() []*engine.Scenario) ([]*engine.Scenario, error) {
	if len(f.paths) == 0 {
		return builtin(), nil
	}
	ss, err := scenariofile.Load(f.paths...)
	if err != nil {
		var fe *scenariofile.Error
		if errors.As(err, &fe) {
			return nil, usageError("%v", fe)
		}
		return nil, usageError("--scenario-file: %v", err)
	}
	var out []*engine.Scenario
	for _, s := range ss {
		if r := roleOf(s.ID); role != "" && r != role {
			return nil, usageError("--scenario-file: %s is a %s-role scenario: run it with xdsconform %s", s.ID, r, r)
		}
		out = append(out, s)
	}
	return out, nil
}

// roleOf is the role of a scenario ID, its first segment.
func roleOf(id string) string {
	for i := range len(id) {
		if id[i] == '/' {
			return id[:i]
		}
	}
	return id
}
