// Package specmd extracts the numbered rules from the requirements
// catalogue (internal/requirements/requirements.md, a copy of
// shared/spec/requirements.md with the repository's own rules appended)
// and renders them as the TSV file that package
// requirements embeds.
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

// Entry is one numbered rule as written in the document. Every field is the
// document's raw Markdown text; a bullet that runs over several lines keeps
// its line breaks, which WriteTSV folds (Normalize).
type Entry struct {
	// ID and Title come from the "#### ID: title" heading. The ID's area
	// prefix ("NONCE" for "NONCE-7") is not stored: readers derive it.
	ID, Title string
	// Binds, Strength and Variants come from the "- **Binds** ... |
	// **Strength** ... | **Variants** ..." line.
	Binds, Strength, Variants string
	// Provenance, Source, Text (the "Requirement" bullet), Test and
	// BlackBox (the "Black-box" bullet) are required bullets; Note is
	// optional and empty when absent.
	Provenance, Source, Text, Test, BlackBox, Note string
}

// Header is the first line of the TSV file; the column order is part of the
// file format.
const Header = "id\ttitle\tbinds\tstrength\tvariants\tprovenance\tsource\trequirement\ttest\tblack_box\tnote"

// Columns is the number of fields on every line of the TSV file.
var Columns = len(Entry{}.Fields())

// Fields returns the entry's fields in Header order.
func (e Entry) Fields() []string {
	return []string{e.ID, e.Title, e.Binds, e.Strength, e.Variants,
		e.Provenance, e.Source, e.Text, e.Test, e.BlackBox, e.Note}
}

var (
	headingRE = regexp.MustCompile(`^#### ([A-Z]+)-([0-9]+): (\S.*?)\s*$`)
	bindsRE   = regexp.MustCompile(`^- \*\*Binds\*\* (server|client|both|proxy) \| \*\*Strength\*\* (MUST|SHOULD|MAY) \| \*\*Variants\*\* (\S.*?)\s*$`)
	fieldRE   = regexp.MustCompile(`^- \*\*([A-Za-z-]+)\*\*(?:\s+(.*))?$`)
	summaryRE = regexp.MustCompile(`^(\d+) requirements? in \d+ areas?\b`)
)

// bullets are the field bullets an entry has after its Binds line, in
// document order; all but Note are required.
var bullets = []string{"Provenance", "Source", "Requirement", "Test", "Black-box", "Note"}

// field returns where a bullet's text goes in e.
func field(e *Entry, name string) *string {
	switch name {
	case "Provenance":
		return &e.Provenance
	case "Source":
		return &e.Source
	case "Requirement":
		return &e.Text
	case "Test":
		return &e.Test
	case "Black-box":
		return &e.BlackBox
	case "Note":
		return &e.Note
	}
	return nil
}

// Normalize trims s and folds every run of whitespace that contains a tab or
// a line break into one space, so that a field always fits on one TSV line.
func Normalize(s string) string {
	s = strings.TrimSpace(s)
	if !strings.ContainsAny(s, "\t\r\n") {
		return s
	}
	var parts []string
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == '\t' || r == '\r' || r == '\n' }) {
		if part = strings.TrimSpace(part); part != "" {
			parts = append(parts, part)
		}
	}
	return strings.Join(parts, " ")
}

// Parse reads the catalogue and returns its rules in document order.
//
// It is strict on purpose: every "#### " heading must be a rule heading
// followed (after blank lines) by its Binds/Strength/Variants line and then
// its bullets (Provenance, Source, Requirement, Test and Black-box once
// each, Note at most once, no other bullet), IDs must be unique, and the
// count must equal the sum of the "N requirements in M areas" lines: the
// document's summary, and one for each section of rules the repository
// adds after it. A format change in the document then breaks generation loudly
// instead of silently dropping rules or fields. A line directly under a
// bullet that is not itself a bullet or heading continues that bullet.
func Parse(r io.Reader) ([]Entry, error) {
	var (
		entries  []Entry
		pending  *Entry // heading seen, Binds line not yet
		cur      *Entry // Binds line seen, collecting bullets
		curLine  int
		last     *string // the bullet a continuation line extends
		have     map[string]bool
		declared = -1
		seen     = map[string]int{}
	)
	// finish closes the entry being collected.
	finish := func() error {
		if cur == nil {
			return nil
		}
		for _, b := range bullets {
			if b != "Note" && !have[b] {
				return fmt.Errorf("%s (heading on line %d) has no \"- **%s** ...\" line", cur.ID, curLine, b)
			}
		}
		entries = append(entries, *cur)
		cur, last = nil, nil
		return nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if m := summaryRE.FindStringSubmatch(line); m != nil {
			// The shared summary, then one line per section of rules the
			// repository adds: the count is their sum.
			k, _ := strconv.Atoi(m[1])
			declared = max(declared, 0) + k
		}
		if pending != nil {
			if strings.TrimSpace(line) == "" {
				continue
			}
			m := bindsRE.FindStringSubmatch(line)
			if m == nil {
				return nil, fmt.Errorf("line %d: %s (heading on line %d) is not followed by a \"- **Binds** ... | **Strength** ... | **Variants** ...\" line", n, pending.ID, curLine)
			}
			pending.Binds, pending.Strength, pending.Variants = m[1], m[2], m[3]
			cur, pending, have = pending, nil, map[string]bool{}
			continue
		}
		if cur != nil {
			switch {
			case strings.TrimSpace(line) == "":
				last = nil
				continue
			case strings.HasPrefix(line, "- "):
				m := fieldRE.FindStringSubmatch(line)
				var dst *string
				if m != nil {
					dst = field(cur, m[1])
				}
				if dst == nil {
					return nil, fmt.Errorf("line %d: %s: %q is not one of the bullets %s", n, cur.ID, line, strings.Join(bullets, ", "))
				}
				if have[m[1]] {
					return nil, fmt.Errorf("line %d: %s: second \"- **%s**\" bullet", n, cur.ID, m[1])
				}
				have[m[1]] = true
				*dst = m[2]
				last = dst
				continue
			case last != nil && !strings.HasPrefix(line, "#"):
				*last += "\n" + line
				continue
			}
			if err := finish(); err != nil {
				return nil, err
			}
		}
		if !strings.HasPrefix(line, "#### ") {
			continue
		}
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %d: heading %q is not of the form \"#### AREA-n: title\"", n, line)
		}
		id := m[1] + "-" + m[2]
		if prev, dup := seen[id]; dup {
			return nil, fmt.Errorf("line %d: %s already defined on line %d", n, id, prev)
		}
		seen[id] = n
		pending, curLine = &Entry{ID: id, Title: m[3]}, n
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if pending != nil {
		return nil, fmt.Errorf("%s (heading on line %d) has no Binds line", pending.ID, curLine)
	}
	if err := finish(); err != nil {
		return nil, err
	}
	if declared < 0 {
		return nil, fmt.Errorf("no \"N requirements in M areas\" summary line found; cannot cross-check the count")
	}
	if declared != len(entries) {
		return nil, fmt.Errorf("summary declares %d requirements but %d rule headings were found", declared, len(entries))
	}
	return entries, nil
}

// WriteTSV writes the header line and one line per entry, in Header order.
// Fields are normalised first (see Normalize), so that the TSV needs no
// quoting scheme: a field never contains a tab or a line break.
func WriteTSV(w io.Writer, entries []Entry) error {
	var b strings.Builder
	b.WriteString(Header + "\n")
	for _, e := range entries {
		fields := e.Fields()
		for i, f := range fields {
			fields[i] = Normalize(f)
		}
		b.WriteString(strings.Join(fields, "\t") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
