package process

import (
	"fmt"
	"strings"
	"text/template"
)

// Expand fills a command template (text/template syntax, e.g.
// "client --bootstrap {{.Bootstrap}}") with vars. Every value is
// shell-quoted as it is substituted, so a path or JSON with spaces or
// quotes stays one word and cannot inject commands. A variable the
// template uses but vars lacks is an error naming it.
func Expand(tmpl string, vars map[string]string) (string, error) {
	t, err := template.New("command").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return "", fmt.Errorf("command template %q: %w", tmpl, err)
	}
	quoted := make(map[string]string, len(vars))
	for k, v := range vars {
		quoted[k] = Quote(v)
	}
	var b strings.Builder
	if err := t.Execute(&b, quoted); err != nil {
		return "", fmt.Errorf("command template %q: %w", tmpl, err)
	}
	return b.String(), nil
}

// Quote returns s as one POSIX shell word: single-quoted, with each
// embedded single quote written as '\”.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
