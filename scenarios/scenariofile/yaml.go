package scenariofile

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// locations maps a JSON pointer into a document ("/steps/2/expect/type")
// to the YAML node it came from, so an error the schema finds at a pointer
// can name the line.
type locations map[string]*yaml.Node

// maxListItems is the most items any list of a scenario holds: the
// schema's largest maxItems (TestListBoundIsTheSchemas).
const maxListItems = 1000

// toValue turns a YAML node into the JSON value the schema validates
// (map[string]any, []any, string, json.Number, bool, nil), recording each
// node's pointer. It refuses what JSON cannot say and what a scenario has
// no use for: anchors and aliases (whose expansion is unbounded), keys
// that are not strings, a key given twice, and a list longer than any a
// scenario holds.
func toValue(n *yaml.Node, ptr string, locs locations) (any, *lineError) {
	locs[ptr] = n
	if n.Anchor != "" || n.Kind == yaml.AliasNode {
		return nil, errAt(n, "anchors and aliases (&, *) are not supported in scenario files")
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				return nil, errAt(k, "merge keys (<<) are not supported in scenario files")
			}
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" {
				return nil, errAt(k, "a mapping key must be a plain string")
			}
			if _, dup := m[k.Value]; dup {
				return nil, errAt(k, fmt.Sprintf("key %q is given twice", k.Value))
			}
			child := ptr + "/" + escapePointer(k.Value)
			locs[child+"#key"] = k
			val, err := toValue(v, child, locs)
			if err != nil {
				return nil, err
			}
			m[k.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		if len(n.Content) > maxListItems {
			// Checked here, before the schema: validating every item of
			// a list it will refuse anyway took a file of a few MiB tens of
			// seconds and hundreds of megabytes.
			return nil, errAt(n, fmt.Sprintf("a list of %d items: no list of a scenario holds more than %d", len(n.Content), maxListItems))
		}
		s := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			val, err := toValue(c, ptr+"/"+strconv.Itoa(i), locs)
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		return s, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, errAt(n, err.Error())
			}
			return b, nil
		case "!!int", "!!float":
			// Kept as written, so the schema judges the number itself
			// (an integer, a range) without float rounding.
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, errAt(n, err.Error())
			}
			if i, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
				return json.Number(strconv.FormatInt(i, 10)), nil
			}
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
		}
		// Strings, and timestamps and the like, which a scenario only
		// ever reads as text.
		return n.Value, nil
	}
	return nil, errAt(n, "unexpected YAML node")
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// pointer joins a schema error's instance location into a JSON pointer.
func pointer(loc []string) string {
	var b strings.Builder
	for _, p := range loc {
		b.WriteString("/")
		b.WriteString(escapePointer(p))
	}
	return b.String()
}

// readable turns an instance location into what a person reads:
// steps[2].expect.type.
func readable(loc []string) string {
	var b strings.Builder
	for _, p := range loc {
		if _, err := strconv.Atoi(p); err == nil {
			b.WriteString("[" + p + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteString(".")
		}
		b.WriteString(p)
	}
	return b.String()
}

// lineError is an error at a line of the file; the file name is added by
// Parse.
type lineError struct {
	line int
	msg  string
}

func errAt(n *yaml.Node, msg string) *lineError {
	line := 1
	if n != nil && n.Line > 0 {
		line = n.Line
	}
	return &lineError{line: line, msg: msg}
}

// Error is a scenario file that cannot be run: it does not parse, does not
// match the schema, or says something the harness cannot do (an unknown
// rule, an undefined label, a variant that does not exist). Its text is
// one line, FILE:LINE: what is wrong.
type Error struct {
	// File is the file's name as given.
	File string
	// Line is the line of the offending node, from 1.
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error is the one line FILE:LINE: what is wrong.
func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }
