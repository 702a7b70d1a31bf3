package main

import (
	"path"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// registerCompletions gives the shell completion of c's flags that take
// names (`xdsconform completion bash|zsh|fish|powershell` writes the
// script): scenario IDs, families and ID[variant] for --run and --skip,
// variants, the reference peers' faults, observers, and the fixed choices
// of --color, --fail-on, --transcripts, --level and --client-profile. Each is registered
// where c has the flag; catalogue gives the scenarios c runs.
func registerCompletions(c *cobra.Command, catalogue func() []*engine.Scenario) {
	var variants []string
	for _, v := range wire.KnownVariants {
		variants = append(variants, v.String())
	}
	funcs := map[string]cobra.CompletionFunc{
		"run":             completePairs(catalogue),
		"skip":            completePairs(catalogue),
		"variant":         completeList(variants),
		"client-variants": completeList(variants),
		"level":           completeList([]string{"MUST", "SHOULD", "MAY"}),
		"color":           completeChoices("auto\ton a terminal, unless NO_COLOR is set or TERM is dumb", "always", "never"),
		"fail-on":         completeChoices("must\tfail on broken MUST rules only", "should\tfail on broken MUST and SHOULD rules"),
		"transcripts":     completeChoices("failing\tevery pair that did not pass", "all", "none"),
	}
	switch c.Name() {
	case "server":
		funcs["fault"] = completeList(faultNames(targets.ServerFaults(targets.BuiltinReference)))
	case "client":
		funcs["fault"] = completeList(faultNames(targets.ClientFaults(targets.BuiltinReference)))
		funcs["observer"] = completeChoices("csds\tthe Client Status Discovery Service", "admin\tEnvoy's /config_dump", "none\tno status view: the scenarios reading one are skipped")
		funcs["client-profile"] = completeChoices("grpc\ta gRPC client: the API listener, then its route, cluster, endpoints", "envoy\tlisteners and clusters by wildcard")
	}
	for name, fn := range funcs {
		if c.Flags().Lookup(name) != nil {
			// Only a second registration of one flag fails: a bug here.
			if err := c.RegisterFlagCompletionFunc(name, fn); err != nil {
				panic(err)
			}
		}
	}
}

// faultNames are the names of faults, each with its description.
func faultNames(faults []targets.Fault) []string {
	out := make([]string, len(faults))
	for i, f := range faults {
		out[i] = f.Name + "\t" + f.Description
	}
	return out
}

// completeChoices completes one of choices ("value\tdescription").
func completeChoices(choices ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(choices, cobra.ShellCompDirectiveNoFileComp)
}

// completeList completes the last item of a comma-separated list of
// values ("value\tdescription"), keeping the items before it.
func completeList(values []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		done, last := splitList(toComplete)
		var out []cobra.Completion
		for _, v := range values {
			name, _, _ := strings.Cut(v, "\t")
			if strings.HasPrefix(strings.ToLower(name), strings.ToLower(last)) {
				out = append(out, done+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completePairs completes a --run or --skip pattern: the scenario IDs and
// families ("server/nonce/*") that start with what was typed, and once an
// ID is typed whole (or with its "["), its ID[variant] pairs. Descriptions
// are the scenarios' titles.
func completePairs(catalogue func() []*engine.Scenario) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		done, last := splitList(toComplete)
		id, _, bracket := strings.Cut(last, "[")
		var out, families []cobra.Completion
		for _, s := range catalogue() {
			if s.ID == id || bracket && strings.HasPrefix(s.ID, id) {
				for _, v := range s.Variants {
					if pair := s.ID + "[" + v.String() + "]"; strings.HasPrefix(pair, last) {
						out = append(out, done+pair+"\t"+s.Title)
					}
				}
			}
			if !bracket && strings.HasPrefix(s.ID, last) {
				out = append(out, done+s.ID+"\t"+s.Title)
				if family := path.Dir(s.ID) + "/*"; strings.HasPrefix(family, last) && !slices.Contains(families, done+family) {
					families = append(families, done+family)
				}
			}
		}
		return append(families, out...), cobra.ShellCompDirectiveNoFileComp
	}
}

// splitList splits a comma-separated list being typed into the items
// done (with their trailing comma) and the last one.
func splitList(s string) (done, last string) {
	i := strings.LastIndex(s, ",")
	return s[:i+1], s[i+1:]
}

// serverCatalogue, clientCatalogue and bothCatalogues are the scenarios
// of each command, for completion.
func serverCatalogue() []*engine.Scenario { return scenarios.Server() }
func clientCatalogue() []*engine.Scenario { return scenarios.Client() }
func bothCatalogues() []*engine.Scenario {
	return append(slices.Clip(scenarios.Server()), scenarios.Client()...)
}
