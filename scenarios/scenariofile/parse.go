package scenariofile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/xdsconform/xdsconform/engine"
)

// MaxFileBytes bounds a scenario file: files come from bug reports, so
// they are input the harness does not trust, and the largest useful one is
// a few hundred steps.
const MaxFileBytes = 4 << 20

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

// pipeReadTimeout bounds the reading of a scenario file that is not a
// regular file (a FIFO, a shell's <(...)): a writer that never comes, or
// never finishes, must not hold the harness.
var pipeReadTimeout = 3 * time.Second

// readBounded reads at most MaxFileBytes of path. A regular file is read
// as it is; anything else (a FIFO, a process substitution, a device) is
// opened without blocking and read within pipeReadTimeout, since opening
// a FIFO no one writes to waits forever and ignores signals.
func readBounded(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("scenario file: %w", err) // os errors name the path
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("scenario file %s: is a directory", path)
	}
	flags := os.O_RDONLY
	if !fi.Mode().IsRegular() {
		flags |= syscall.O_NONBLOCK
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, fmt.Errorf("scenario file: %w", err)
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		// Pipes opened so take deadlines (the runtime polls them); files
		// that do not, such as character devices, are refused here.
		if err := f.SetReadDeadline(time.Now().Add(pipeReadTimeout)); err != nil {
			return nil, fmt.Errorf("scenario file %s: not a regular file, nor a pipe (%v)", path, fi.Mode().Type())
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, fmt.Errorf("scenario file %s: not a regular file, and nothing finished writing it within %v", path, pipeReadTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("scenario file %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, &Error{File: path, Line: 1, Msg: fmt.Sprintf("larger than %d MiB", MaxFileBytes>>20)}
	}
	return data, nil
}

func parse(data []byte, name string, seen map[string]string) ([]*engine.Scenario, error) {
	if len(data) > MaxFileBytes {
		return nil, &Error{File: name, Line: 1, Msg: fmt.Sprintf("larger than %d MiB", MaxFileBytes>>20)}
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
			line, msg := 1, err.Error()
			if m := yamlLine.FindStringSubmatch(msg); m != nil {
				line, _ = strconv.Atoi(m[1])
				msg = m[2]
			}
			msg = strings.TrimPrefix(msg, "yaml: ")
			return nil, &Error{File: name, Line: line, Msg: "not YAML: " + msg}
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
