package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/targets"
)

// newFaultsCmd is `xdsconform faults [server|client]`: the fault switches
// of the reference peers, one a line with what each breaks, which --fault
// takes (--help and the unknown-fault error point here instead of listing
// them inline).
func newFaultsCmd(out io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "faults [server|client]",
		Short: "List the reference peers' fault switches (--fault) and what each breaks",
		Long: `List the fault switches of builtin:reference, the server's (for xdsconform
server --fault) and the client's (for xdsconform client --fault), one a line with
what each breaks. Each scenario is proven to fail against the fault that breaks
its rule (make test).`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: []string{"server", "client"},
		RunE: func(_ *cobra.Command, args []string) error {
			roles := []string{"server", "client"}
			if len(args) == 1 {
				if !slices.Contains(roles, args[0]) {
					return usageError("faults %q: want server or client", args[0])
				}
				roles = args[:1]
			}
			w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
			for i, role := range roles {
				faults := targets.ServerFaults(targets.BuiltinReference)
				if role == "client" {
					faults = targets.ClientFaults(targets.BuiltinReference)
				}
				if i > 0 {
					fmt.Fprintln(w)
				}
				fmt.Fprintf(w, "%s faults (xdsconform %s --target builtin:reference --fault NAME):\n", role, role)
				for _, f := range faults {
					profile := ""
					if f.Profile != "" {
						profile = " (" + f.Profile + " profile only)"
					}
					fmt.Fprintf(w, "  %s\t%s%s\n", f.Name, f.Description, profile)
				}
			}
			return w.Flush()
		},
	}
}
