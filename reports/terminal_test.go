package reports

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"plain line\n\tindented":         "plain line\n\tindented",
		"server \x1b]0;pwned\x07 v1":     `server \x1b]0;pwned\x07 v1`,
		"csi \u009b2J and del \x7f":      `csi \u009b2J and del \x7f`,
		"bad utf-8 \xff\xfe end":         `bad utf-8 \xff\xfe end`,
		"a real replacement char \uFFFD": "a real replacement char \uFFFD",
		"carriage\rreturn":               `carriage\x0dreturn`,
		"evil\u202Edessap":               `evil\u202edessap`,
		"isolate \u2066x\u2069":          `isolate \u2066x\u2069`,
	} {
		assert.Equal(t, want, Sanitize(in), "%q", in)
	}
}

// TestTerminalSplitRune: a write that ends inside a UTF-8 sequence must not
// turn its bytes into escapes, nor let a C1 control through in two halves.
func TestTerminalSplitRune(t *testing.T) {
	var buf bytes.Buffer
	w := Terminal(&buf)
	for _, chunk := range [][]byte{[]byte("é is \xc3"), []byte("\xa9; csi \xc2"), []byte("\x9b2J\n")} {
		n, err := w.Write(chunk)
		require.NoError(t, err)
		require.Equal(t, len(chunk), n)
	}
	assert.Equal(t, "é is é; csi \\u009b2J\n", buf.String())
}

// A buffer, a file and a Terminal around either are not terminals.
func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	require.NoError(t, err)
	defer f.Close()
	for _, w := range []io.Writer{&bytes.Buffer{}, f, Terminal(f), Terminal(&bytes.Buffer{})} {
		tty, width := IsTerminal(w)
		assert.False(t, tty, "%T", w)
		assert.Zero(t, width)
	}
}
