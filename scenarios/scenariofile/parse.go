package scenariofile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/infile"
)

// MaxFileBytes bounds a scenario file: files come from bug reports, so
// they are input the harness does not trust, and the largest useful one is
// a few hundred steps.
//
// Parsed, YAML takes about 75 bytes of memory for each byte of a file of
// short steps (a node per key and value): at 512 KiB a file stays within
// what a reader may take (64 MiB, and four times its size), and holds
// thousands of steps, several times the 1000 a scenario may have.
const MaxFileBytes = 512 << 10

// maxDocuments bounds the scenarios of one file.
const maxDocuments = 1000

// Load reads and compiles the scenario files at paths, in order. A
// scenario ID given twice, in one file or across them, is an error at its
// second definition. Every error is an *Error (FILE:LINE: what is wrong),
// but for a file that cannot be read.
func Load(paths ...string) ([]*engine.Scenario, error) {
	var all []*engine.Scenario
	seen := map[string]string{}
	for _, path := range paths {
		data, err := readBounded(path)
		if err != nil {
			return nil, err
		}
		ss, err := parse(data, path, seen)
		if err != nil {
			return nil, err
		}
		all = append(all, ss...)
	}
	return all, nil
}

// Parse compiles the scenario documents of one file's bytes; name is the
// file's name in errors.
func Parse(data []byte, name string) ([]*engine.Scenario, error) {
	return parse(data, name, map[string]string{})
}

// Documents decodes and checks the scenario documents of one file's bytes
// without compiling them into scenarios: what a tool that rewrites files
// needs. A document that would not compile is an error all the same.
func Documents(data []byte, name string) ([]*Document, error) {
	if err := checkSize(data, name); err != nil {
		return nil, err
	}
	docs, err := decodeAll(data, name)
	if err != nil {
		return nil, err
	}
	out := make([]*Document, len(docs))
	for i, d := range docs {
		if _, err := compile(d, name); err != nil {
			return nil, err
		}
		out[i] = d.doc
	}
	return out, nil
}

// readBounded reads at most MaxFileBytes of path, its size checked
// before it is read; a FIFO or a shell's <(...) is read under a deadline
// to each next byte (opening a FIFO no one writes to would otherwise wait
// forever, deaf to signals), and a device or a directory is refused
// (internal/infile).
func readBounded(path string) ([]byte, error) {
	data, err := infile.ReadAll(context.Background(), path, MaxFileBytes)
	var tooLarge *infile.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return nil, &Error{File: path, Line: 1, Msg: fmt.Sprintf("larger than %d KiB", MaxFileBytes>>10)}
	case err != nil:
		return nil, fmt.Errorf("scenario file: %w", err) // errors name the path
	}
	return data, nil
}

// maxNodes bounds a file's YAML nodes (keys, values, list items), as
// estimated before parsing by its separators (nodeEstimate): a parsed
// node costs several hundred bytes (the node, its JSON pointer, its value
// for the schema), so a file of short values within MaxFileBytes could
// still take hundreds of megabytes. The largest file shipped here has a
// few hundred, about ten a step, so a scenario of 1000 steps about 10,000.
const maxNodes = 30_000

// nodeEstimate is an upper bound of the YAML nodes in data: every node
// but the first follows one of these.
func nodeEstimate(data []byte) int {
	n := 0
	for _, c := range data {
		switch c {
		case ',', '\n', ':', '[', '{':
			n++
		}
	}
	return n
}

// checkSize refuses a file over MaxFileBytes or maxNodes, before any
// parsing.
func checkSize(data []byte, name string) error {
	switch {
	case len(data) > MaxFileBytes:
		return &Error{File: name, Line: 1, Msg: fmt.Sprintf("larger than %d KiB", MaxFileBytes>>10)}
	case nodeEstimate(data) > maxNodes:
		return &Error{File: name, Line: 1, Msg: fmt.Sprintf("more than %d YAML nodes (keys, values, list items), the most a scenario file may hold", maxNodes)}
	}
	return nil
}

func parse(data []byte, name string, seen map[string]string) ([]*engine.Scenario, error) {
	if err := checkSize(data, name); err != nil {
		return nil, err
	}
	docs, err := decodeAll(data, name)
	if err != nil {
		return nil, err
	}
	var out []*engine.Scenario
	for _, d := range docs {
		s, err := compile(d, name)
		if err != nil {
			return nil, err
		}
		if first, dup := seen[s.ID]; dup {
			return nil, &Error{File: name, Line: d.line("/id"), Msg: fmt.Sprintf("scenario %s is defined twice (first in %s)", s.ID, first)}
		}
		seen[s.ID] = fmt.Sprintf("%s:%d", name, d.line("/id"))
		out = append(out, s)
	}
	return out, nil
}

// decoded is one document as read: its Go form, and where each of its
// nodes is, for errors found after the schema.
type decoded struct {
	doc  *Document
	locs locations
}

// line is the line of the node at pointer ptr, or the nearest enclosing
// node that exists.
func (d *decoded) line(ptr string) int {
	for {
		if n := d.locs[ptr]; n != nil {
			return n.Line
		}
		i := bytes.LastIndexByte([]byte(ptr), '/')
		if i < 0 {
			return 1
		}
		ptr = ptr[:i]
	}
}

// yamlLine finds the line in a YAML error's text ("yaml: line 3: ...").
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// decodeAll splits the file into documents, checks each against the
// schema and decodes it.
// yamlError splits a YAML error into its line (1 when it names none) and
// its message.
func yamlError(err error) (int, string) {
	line, msg := 1, err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	return line, strings.TrimPrefix(msg, "yaml: ")
}

// maxRealLineSearch bounds the file realLine searches: each step of the
// search parses a prefix of it again.
const maxRealLineSearch = 1 << 20

// realLine is the line a YAML syntax error is really at. The parser names
// the line of the construct it was in (the mapping an over-indented key
// breaks, which may be the document's first line), not the line that
// broke it. That line is the first whose prefix of the file fails to parse
// with the same message: every prefix before the bad line parses, as
// a block cut at a line's end is still YAML, and every prefix through it
// fails. It is found by bisection between the parser's line and the end;
// when the prefixes do not behave so (a quoted scalar spanning lines, say),
// the parser's own line stands.
func realLine(data []byte, parserLine int, msg string) int {
	if len(data) > maxRealLineSearch {
		return parserLine
	}
	ends := lineEnds(data)
	fails := func(k int) bool { // the first k lines fail with msg
		if k <= 0 {
			return false
		}
		dec := yaml.NewDecoder(bytes.NewReader(data[:ends[k-1]]))
		for {
			var n yaml.Node
			err := dec.Decode(&n)
			if err == nil {
				continue
			}
			if errors.Is(err, io.EOF) {
				return false
			}
			_, m := yamlError(err)
			return m == msg
		}
	}
	lo, hi := max(parserLine, 1), len(ends)
	if lo > hi || !fails(hi) {
		return parserLine
	}
	for lo < hi { // the first failing prefix is in [lo, hi]
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo > parserLine && fails(lo-1) {
		return parserLine
	}
	return lo
}

// lineEnds is the offset just past each line of data (its newline
// included); a last line without a newline ends at len(data).
func lineEnds(data []byte) []int {
	var ends []int
	for i, c := range data {
		if c == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		ends = append(ends, len(data))
	}
	return ends
}

func decodeAll(data []byte, name string) ([]*decoded, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*decoded
	for {
		var root yaml.Node
		err := dec.Decode(&root)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			line, msg := yamlError(err)
			return nil, &Error{File: name, Line: realLine(data, line, msg), Msg: "not YAML: " + msg}
		}
		if len(root.Content) == 0 || root.Content[0].ShortTag() == "!!null" {
			continue // an empty document, as a trailing --- makes
		}
		if len(docs) == maxDocuments {
			return nil, &Error{File: name, Line: root.Line, Msg: fmt.Sprintf("more than %d scenarios in one file", maxDocuments)}
		}
		d, lerr := decodeOne(root.Content[0])
		if lerr != nil {
			return nil, &Error{File: name, Line: lerr.line, Msg: lerr.msg}
		}
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		return nil, &Error{File: name, Line: 1, Msg: "no scenario in the file (want apiVersion: " + APIVersion + ", kind: " + Kind + ", ...)"}
	}
	return docs, nil
}

func decodeOne(n *yaml.Node) (*decoded, *lineError) {
	locs := locations{}
	v, lerr := toValue(n, "", locs)
	if lerr != nil {
		return nil, lerr
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errAt(n, "a scenario is a mapping (apiVersion, kind, id, title, steps, ...)")
	}
	if lerr := validate(v, locs); lerr != nil {
		return nil, lerr
	}
	doc := &Document{}
	if err := n.Decode(doc); err != nil {
		return nil, errAt(n, err.Error())
	}
	steps := locs["/steps"]
	for _, sn := range steps.Content {
		var err error
		if doc.Role() == "client" {
			var st ClientStep
			err = sn.Decode(&st)
			doc.ClientSteps = append(doc.ClientSteps, st)
		} else {
			var st ServerStep
			err = sn.Decode(&st)
			doc.ServerSteps = append(doc.ServerSteps, st)
		}
		if err != nil {
			return nil, errAt(sn, err.Error())
		}
	}
	return &decoded{doc: doc, locs: locs}, nil
}
