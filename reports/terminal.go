package reports

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/term"
)

// Terminal wraps w so that what reaches a terminal cannot drive it: C0
// control bytes other than newline and tab, DEL, C1 controls and invalid
// UTF-8 are written as visible escapes (\x1b, \u009b), and so are the
// bidirectional controls (\u202e). Much of what the
// console prints comes from the target (a fixture's server name, resource
// names, a client's output tail, error texts), and an escape sequence in
// any of it could rewrite the screen or the terminal's title, or hide a
// failure line. A Console given such a writer writes through it: it
// escapes every text itself and adds only its own colours and status line.
func Terminal(w io.Writer) io.Writer { return &terminal{w: w} }

// IsTerminal reports whether w, or the writer a Terminal wraps, is a
// terminal, and its width in columns (0 when it cannot be told): what
// decides whether the console draws a live status line and colours.
func IsTerminal(w io.Writer) (bool, int) {
	if t, ok := w.(*terminal); ok {
		w = t.w
	}
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false, 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		width = 0
	}
	return true, width
}

type terminal struct {
	w io.Writer
	// partial holds the first bytes of a UTF-8 sequence that a write
	// ended in the middle of, completed by the next write.
	partial []byte
}

// Write escapes p and writes it whole; it reports len(p) on success, as
// callers count what they gave, not what the escapes made of it.
func (t *terminal) Write(p []byte) (int, error) {
	b := append(t.partial, p...)
	t.partial = nil
	var out strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(b) {
				// The rest of a sequence may come with the next write.
				t.partial = append([]byte(nil), b...)
				break
			}
			fmt.Fprintf(&out, `\x%02x`, b[0])
			b = b[1:]
			continue
		}
		out.WriteString(Sanitize(string(b[:size])))
		b = b[size:]
	}
	if _, err := io.WriteString(t.w, out.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Sanitize returns s with what a terminal would act on escaped, as
// Terminal writes it: control characters other than newline and tab, and
// invalid UTF-8.
func Sanitize(s string) string {
	clean := true
	for _, r := range s {
		if controlRune(r) || r == utf8.RuneError {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], string(utf8.RuneError)):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && controlRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case controlRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// controlRune reports whether r is a control character a terminal acts
// on: C0 other than newline and tab, DEL, C1, and the bidirectional
// controls (U+202E and its kin reorder what follows them on the line; the
// harness never writes one itself).
func controlRune(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) || unicode.Is(unicode.Bidi_Control, r)
}
