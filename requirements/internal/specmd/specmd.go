// Package specmd extracts the numbered rules from the requirements
// catalogue (shared/spec/requirements.md) and renders them as the TSV file
// that package requirements embeds.
//
// It lives apart from package requirements so that the generator can be
// built even when catalog.tsv is missing or broken (go:embed would otherwise
// stop the generator from compiling), and so that the requirements tests can
// regenerate the catalogue in memory with exactly the generator's code.
package specmd

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Entry is one numbered rule as written in the document.
type Entry struct {
	ID, Title, Binds, Strength, Variants string
}

// Header is the first line of the TSV file; the column order is part of the
// file format.
const Header = "id\ttitle\tbinds\tstrength\tvariants"

var (
	headingRE = regexp.MustCompile(`^#### ([A-Z]+-[0-9]+): (\S.*?)\s*$`)
	bindsRE   = regexp.MustCompile(`^- \*\*Binds\*\* (server|client|both|proxy) \| \*\*Strength\*\* (MUST|SHOULD|MAY) \| \*\*Variants\*\* (\S.*?)\s*$`)
	summaryRE = regexp.MustCompile(`^(\d+) requirements in \d+ areas`)
)

// Parse reads the catalogue and returns its rules in document order.
//
// It is strict on purpose: every "#### " heading must be a rule heading
// followed (after blank lines) by its Binds/Strength/Variants line, IDs must
// be unique, and the count must equal the "N requirements in M areas" line
// of the document's summary. A format change in the document then breaks
// generation loudly instead of silently dropping rules.
func Parse(r io.Reader) ([]Entry, error) {
	var (
		entries  []Entry
		pending  *Entry // heading seen, Binds line not yet
		pendLine int
		declared = -1
		seen     = map[string]int{}
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if m := summaryRE.FindStringSubmatch(line); m != nil && declared < 0 {
			declared, _ = strconv.Atoi(m[1])
		}
		if pending != nil {
			if strings.TrimSpace(line) == "" {
				continue
			}
			m := bindsRE.FindStringSubmatch(line)
			if m == nil {
				return nil, fmt.Errorf("line %d: %s (heading on line %d) is not followed by a \"- **Binds** ... | **Strength** ... | **Variants** ...\" line", n, pending.ID, pendLine)
			}
			pending.Binds, pending.Strength, pending.Variants = m[1], m[2], m[3]
			entries = append(entries, *pending)
			pending = nil
			continue
		}
		if !strings.HasPrefix(line, "#### ") {
			continue
		}
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %d: heading %q is not of the form \"#### AREA-n: title\"", n, line)
		}
		if prev, dup := seen[m[1]]; dup {
			return nil, fmt.Errorf("line %d: %s already defined on line %d", n, m[1], prev)
		}
		seen[m[1]] = n
		pending, pendLine = &Entry{ID: m[1], Title: m[2]}, n
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if pending != nil {
		return nil, fmt.Errorf("%s (heading on line %d) has no Binds line", pending.ID, pendLine)
	}
	if declared < 0 {
		return nil, fmt.Errorf("no \"N requirements in M areas\" summary line found; cannot cross-check the count")
	}
	if declared != len(entries) {
		return nil, fmt.Errorf("summary declares %d requirements but %d rule headings were found", declared, len(entries))
	}
	return entries, nil
}

// WriteTSV writes the header line and one line per entry. Fields may not
// contain tabs or newlines; the document never has them, and refusing them
// keeps the TSV free of any quoting scheme.
func WriteTSV(w io.Writer, entries []Entry) error {
	var b strings.Builder
	b.WriteString(Header + "\n")
	for _, e := range entries {
		fields := []string{e.ID, e.Title, e.Binds, e.Strength, e.Variants}
		for _, f := range fields {
			if strings.ContainsAny(f, "\t\r\n") {
				return fmt.Errorf("%s: field %q contains a tab or newline", e.ID, f)
			}
		}
		b.WriteString(strings.Join(fields, "\t") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
