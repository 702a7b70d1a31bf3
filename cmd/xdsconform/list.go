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
	"github.com/xdsconform/xdsconform/wire"
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

// listSelection is list's selection flags: the suites' own, so that a
// list shows what a run with the same flags would run.
type listSelection struct {
	run, skip, variants []string
	level               string
}

func (f *listSelection) register(c *cobra.Command) {
	fs := c.Flags()
	fs.StringSliceVar(&f.run, "run", nil, "list only scenarios matching these glob patterns (ID or ID[variant]; * matches anything)")
	fs.StringSliceVar(&f.skip, "skip", nil, "leave out scenarios matching these glob patterns")
	fs.StringSliceVar(&f.variants, "variant", nil, "list only these variants: sotw-ads, sotw-pertype, delta-ads, delta-pertype, rest")
	fs.StringVar(&f.level, "level", "", "list only these levels, comma-separated: MUST,SHOULD,MAY")
}

// selection checks the flags as the suites do.
func (f *listSelection) selection(c *cobra.Command) (engine.Selection, error) {
	return parseSelection(c, f.run, f.skip, f.variants, f.level)
}

// parseSelection checks the selection flags of c (the suites' and
// list's) and returns the selection they make.
func parseSelection(c *cobra.Command, run, skip, variants []string, level string) (engine.Selection, error) {
	for _, name := range []string{"run", "skip"} {
		if err := nonEmptyPatterns(c, name); err != nil {
			return engine.Selection{}, err
		}
	}
	levels, err := engine.ParseLevels(level)
	if err != nil {
		return engine.Selection{}, usageError("--level: %v", err)
	}
	var vs []wire.Variant
	for _, s := range variants {
		v, err := wire.ParseVariant(s)
		if err != nil {
			return engine.Selection{}, usageError("--variant: %v", err)
		}
		vs = append(vs, v)
	}
	return engine.Selection{Run: run, Skip: skip, Levels: levels, Variants: vs}, nil
}

// selected keeps the scenarios of cat with a selected pair, each with
// only its selected variants, in catalogue order.
func selected(cat []*engine.Scenario, sel engine.Selection) ([]*engine.Scenario, error) {
	pairs, err := engine.Expand(cat, sel)
	if err != nil {
		return nil, err
	}
	var out []*engine.Scenario
	byID := map[string]*engine.Scenario{}
	for _, p := range pairs {
		s := byID[p.Scenario.ID]
		if s == nil {
			c := *p.Scenario
			c.Variants = nil
			s = &c
			byID[s.ID] = s
			out = append(out, s)
		}
		s.Variants = append(s.Variants, p.Variant)
	}
	return out, nil
}

func newListCmd(out io.Writer) *cobra.Command {
	var asJSON bool
	var files scenarioFiles
	var sel listSelection
	c := &cobra.Command{
		Use:   "list [--json] [--run PATTERN] [--skip PATTERN] [--level LEVELS] [--variant VARIANT]",
		Short: "List the scenario catalogue",
		Long: `List every scenario: its ID, title, the requirement IDs it checks (from the
requirements catalogue), its level, the variants it runs in and what it needs
from the target.`,
		Example: "  xdsconform list\n  xdsconform list --run 'server/nonce/*' --variant delta-ads --level MUST\n  xdsconform list --json | jq '.[] | select(.level == \"MUST\") | .id'\n  xdsconform list --scenario-file bug.yaml   # check a scenario file, and see what it cites and needs",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			selection, err := sel.selection(c)
			if err != nil {
				return err
			}
			cat, err := files.catalogue("", func() []*engine.Scenario { return append(scenarios.Server(), scenarios.Client()...) })
			if err != nil {
				return err
			}
			if cat, err = selected(cat, selection); err != nil {
				return usageError("%v", err)
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
	sel.register(c)
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
