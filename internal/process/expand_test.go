package process

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A template that fails never has its text echoed, whatever the failure:
// command lines carry tokens, and the error reaches the console. The
// error still says where, and names an unknown variable and the ones
// there are.
func TestExpandErrorsDoNotEchoTheTemplate(t *testing.T) {
	const token = "sk_live_T0KEN"
	vars := map[string]string{"Bootstrap": "/b.json", "Server": "h:1"}
	for _, tc := range []struct {
		name, tmpl string
		want       []string
	}{
		{"unknown variable", "client --token " + token + " {{.Missing}}", []string{"line 1 column", "unknown variable {{.Missing}}", "Bootstrap, Server"}},
		{"unclosed action", "client --token " + token + " {{.Bootstrap", []string{"line 1", "cannot parse it"}},
		{"unknown function", "client\n--x {{" + token + "}}", []string{"line 2", "cannot parse it", "not defined"}},
		{"quoted argument", `client {{.Bootstrap "` + token + `"}}`, []string{"line 1", "cannot"}},
		{"field of a string", "client {{.Bootstrap." + token + "}}", []string{"line 1", "cannot fill it in"}},
		{"bad number", "client {{0x" + token + "}}", []string{"line 1", "cannot parse it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Expand(tc.tmpl, vars)
			require.Error(t, err)
			var te *TemplateError
			assert.True(t, errors.As(err, &te))
			assert.NotContains(t, err.Error(), token)
			assert.NotContains(t, err.Error(), "T0KEN")
			assert.NotContains(t, err.Error(), "client")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			t.Log(err)
		})
	}
}
