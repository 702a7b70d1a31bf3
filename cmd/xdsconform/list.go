package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/scenarios"
)

// listedScenario is one entry of `list --json`; the layout is stable.
type listedScenario struct {
	ID           string   `json:"id"`
	Role         string   `json:"role"`
	Title        string   `json:"title"`
	Level        string   `json:"level"`
	Requirements []string `json:"requirements"`
	Variants     []string `json:"variants"`
	Needs        []string `json:"needs"`
}

func newListCmd(out io.Writer) *cobra.Command {
	var asJSON bool
	var files scenarioFiles
	c := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the scenario catalogue",
		Long: `List every scenario: its ID, title, the requirement IDs it checks (from the
requirements catalogue), its level, the variants it runs in and what it needs
from the target.`,
		Example: "  xdsconform list\n  xdsconform list --json | jq '.[] | select(.level == \"MUST\") | .id'\n  xdsconform list --scenario-file bug.yaml   # check a scenario file, and see what it cites and needs",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cat, err := files.catalogue("", func() []*engine.Scenario { return append(scenarios.Server(), scenarios.Client()...) })
			if err != nil {
				return err
			}
			var list []listedScenario
			for _, s := range cat {
				list = append(list, describe(s))
			}
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			for _, s := range list {
				fmt.Fprintf(out, "%-55s %-6s %s\n", s.ID, s.Level, s.Title)
				var titles []string
				for _, id := range s.Requirements {
					r, _ := requirements.Lookup(id)
					titles = append(titles, id+" ("+r.Title+")")
				}
				fmt.Fprintf(out, "    rules: %s\n    variants: %s", strings.Join(titles, "; "), strings.Join(s.Variants, ", "))
				if len(s.Needs) > 0 {
					fmt.Fprintf(out, "; needs: %s", strings.Join(s.Needs, ", "))
				}
				fmt.Fprintln(out)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	files.register(c)
	return c
}

func describe(s *engine.Scenario) listedScenario {
	l := listedScenario{ID: s.ID, Role: strings.SplitN(s.ID, "/", 2)[0], Title: s.Title, Level: string(s.Level),
		Requirements: s.Requirements, Variants: []string{}, Needs: []string{}}
	for _, v := range s.Variants {
		l.Variants = append(l.Variants, v.String())
	}
	for _, n := range s.Needs {
		l.Needs = append(l.Needs, string(n))
	}
	return l
}
