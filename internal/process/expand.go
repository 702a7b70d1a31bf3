package process

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

// Expand fills a command template (text/template syntax, e.g.
// "client --bootstrap {{.Bootstrap}}") with vars. Every value is
// shell-quoted as it is substituted, so a path or JSON with spaces or
// quotes stays one word and cannot inject commands. A variable the
// template uses but vars lacks is an error naming it.
//
// Errors never quote the template: a command line often carries a token,
// and the error ends up on the console and in reports. They say where
// (line, column) and what is wrong, with any text quoted from the
// template elided; see TemplateError.
func Expand(tmpl string, vars map[string]string) (string, error) {
	t, err := template.New("command").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return "", templateError(err, "cannot parse it", tmpl, vars)
	}
	quoted := make(map[string]string, len(vars))
	for k, v := range vars {
		quoted[k] = Quote(v)
	}
	var b strings.Builder
	if err := t.Execute(&b, quoted); err != nil {
		return "", templateError(err, "cannot fill it in", tmpl, vars)
	}
	return b.String(), nil
}

// TemplateError is a command template that does not parse or cannot be
// filled in. It keeps no text of the template (nor the error of
// text/template, which quotes it), so it cannot leak a token.
type TemplateError struct {
	// Line and Column locate the problem (0 when unknown).
	Line, Column int
	// Variable is the unknown variable used, when that is the problem.
	Variable string
	// Known lists the variables the template may use, for that case.
	Known []string
	// Problem says what is wrong, with quoted template text elided.
	Problem string
}

// Error says where the template is wrong and how, quoting none of it.
func (e *TemplateError) Error() string {
	var b strings.Builder
	b.WriteString("command template")
	if e.Line > 0 {
		fmt.Fprintf(&b, ", line %d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, " column %d", e.Column)
		}
	}
	if e.Variable != "" {
		fmt.Fprintf(&b, ": unknown variable {{.%s}}", e.Variable)
		if len(e.Known) > 0 {
			fmt.Fprintf(&b, " (the variables are %s)", strings.Join(e.Known, ", "))
		}
		return b.String()
	}
	b.WriteString(": " + e.Problem)
	return b.String()
}

var (
	// templatePos is text/template's prefix: "template: NAME:LINE: " for a
	// parse error, "template: NAME:LINE:COL: " for an execution error.
	templatePos = regexp.MustCompile(`^template: command:(\d+)(?::(\d+))?: `)
	// execContext is the action an execution error quotes.
	execContext = regexp.MustCompile(`^executing "command" at <[^>]*>: `)
	// quotedText is text text/template quotes from the template, possibly
	// truncated with "...".
	quotedText = regexp.MustCompile(`"(?:[^"\\]|\\.)*"(?:\.\.\.)?|<[^>]*>`)
	missingKey = regexp.MustCompile(`^map has no entry for key "([A-Za-z_][A-Za-z0-9_]{0,63})"$`)
)

// templateError turns an error of text/template into a TemplateError:
// the position, and either the unknown variable (a name, which is safe to
// show) or the problem with every quoted fragment, and every word of it
// found in tmpl, elided (text/template also names fields and nodes
// unquoted).
func templateError(err error, what, tmpl string, vars map[string]string) error {
	msg := err.Error()
	var ee template.ExecError
	if errors.As(err, &ee) && ee.Err != nil {
		msg = ee.Err.Error()
	}
	e := &TemplateError{}
	if m := templatePos.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Column, _ = strconv.Atoi(m[2])
		msg = msg[len(m[0]):]
	}
	msg = execContext.ReplaceAllString(msg, "")
	if m := missingKey.FindStringSubmatch(msg); m != nil {
		e.Variable = m[1]
		for k := range vars {
			e.Known = append(e.Known, k)
		}
		slices.Sort(e.Known)
		return e
	}
	words := strings.Fields(quotedText.ReplaceAllString(msg, "…"))
	for i, w := range words {
		if core := strings.Trim(w, ",:;()[]{}'`"); len(core) >= 3 && strings.Contains(tmpl, core) {
			words[i] = strings.Replace(w, core, "…", 1)
		}
	}
	e.Problem = what + ": " + strings.Join(words, " ")
	return e
}

// Quote returns s as one POSIX shell word: single-quoted, with each
// embedded single quote written as '\”.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
