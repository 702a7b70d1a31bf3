package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/wire"
)

// explainWidth is the width explain wraps the catalogue's text to.
const explainWidth = 100

func newExplainCmd(out io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "explain RULE",
		Short: "Show one catalogue rule, its testability and the scenarios checking it",
		Long: `Show one rule of the requirements catalogue (the ID is case-insensitive):
its title, whom it binds, its strength and variants, whether it is black-box
testable, its provenance, its source (with the quoted sentence), the
requirement itself, the catalogue's test idea and note; then, per role, whether
the harness can check it and which scenarios and invariants do.`,
		Example: "  xdsconform explain NONCE-7\n  xdsconform explain dup-1",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			id := strings.ToUpper(strings.TrimSpace(args[0]))
			r, ok := requirements.Lookup(id)
			if !ok {
				if near := closeIDs(id); len(near) > 0 {
					return usageError("unknown rule %q; did you mean %s? (see 'xdsconform coverage -v' for every rule)", args[0], strings.Join(near, ", "))
				}
				return usageError("unknown rule %q (see 'xdsconform coverage -v' for every rule)", args[0])
			}
			explain(out, r)
			return nil
		},
	}
}

func explain(out io.Writer, r requirements.Requirement) {
	fmt.Fprintf(out, "%s: %s\n\n", r.ID, r.Title)
	for _, f := range []struct{ label, text string }{
		{"Binds", r.Binds},
		{"Strength", r.Strength},
		{"Variants", r.Variants},
		{"Black-box", r.BlackBox},
		{"Provenance", r.Provenance},
		{"Source", r.Source},
		{"Requirement", r.Text},
		{"Test", r.Test},
		{"Note", r.Note},
	} {
		if f.text != "" {
			writeWrapped(out, fmt.Sprintf("%-13s", f.label+":"), f.text)
		}
	}

	cites := loadCitations()
	for _, role := range roles {
		testable, reason, assessed := requirements.Testability(r.ID, role)
		scens, invs := cites.scenarios[role][r.ID], cites.invariants[role][r.ID]
		if !assessed && len(scens) == 0 && len(invs) == 0 {
			continue
		}
		fmt.Fprintf(out, "\nIn the %s role (%s):\n", role, roleGloss(role))
		switch {
		case !assessed:
			fmt.Fprintf(out, "  not assessed: the rule binds %s\n", r.Binds)
		case testable && reason != "":
			writeWrapped(out, "  testable: ", reason)
		case testable:
			fmt.Fprintln(out, "  testable")
		default:
			writeWrapped(out, "  not testable: ", reason)
		}
		for _, inv := range invs {
			writeWrapped(out, "  invariant: ", "checked on every message of every "+role+" scenario: "+inv.Check)
		}
		for _, s := range scens {
			fmt.Fprintf(out, "  %s  %s  %s\n", s.ID, s.Level, s.Title)
			fmt.Fprintf(out, "      variants: %s\n", strings.Join(wire.VariantNames(s.Variants), ", "))
		}
		if assessed && testable && len(scens) == 0 && len(invs) == 0 {
			fmt.Fprintf(out, "  no %s scenario checks it yet\n", role)
		}
	}
}

func roleGloss(role string) string {
	if role == requirements.RoleServer {
		return "the harness plays an xDS client against a management server"
	}
	return "the harness plays the management server against an xDS client"
}

// writeWrapped writes prefix and text, wrapped at explainWidth, the
// continuation lines indented to prefix's width.
func writeWrapped(out io.Writer, prefix, text string) {
	fmt.Fprintln(out, wrapText(prefix, text, explainWidth))
}

// wrapText returns prefix and the words of text, in lines of at most width
// characters (unless a word is longer), the continuation lines indented to
// prefix's width; no trailing newline.
func wrapText(prefix, text string, width int) string {
	indent := strings.Repeat(" ", len(prefix))
	var b strings.Builder
	line, empty := prefix, true
	for _, w := range strings.Fields(text) {
		if !empty && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > width {
			b.WriteString(line + "\n")
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	b.WriteString(line)
	return b.String()
}

// closeIDs returns up to three catalogue IDs of id's family (the part
// before the last "-", or all of id) that are closest to id in edit
// distance, nearest first; none when the family is unknown.
func closeIDs(id string) []string {
	family := id
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		family = id[:i]
	}
	type cand struct {
		id   string
		dist int
	}
	var cands []cand
	for _, r := range requirements.All() {
		if r.Family == family {
			cands = append(cands, cand{r.ID, editDistance(id, r.ID)})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return a.dist - b.dist })
	var ids []string
	for _, c := range cands[:min(3, len(cands))] {
		ids = append(ids, c.id)
	}
	return ids
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
