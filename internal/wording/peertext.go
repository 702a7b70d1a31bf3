package wording

import (
	"fmt"
	"strings"
	"unicode"
)

// maxPeerText bounds a peer's text quoted in one line of output.
const maxPeerText = 256

// PeerText is text a peer chose (a fixture's server name, a status
// message), made fit for one line of the harness's output: every control
// character (line breaks included), every bidirectional control (U+202E
// would reverse what follows it on the screen) and the Unicode line and
// paragraph separators are written as escapes (\x0a, \u202e, as the
// terminal writer writes the controls it escapes), and past 256
// runes it is cut with "…". A peer cannot then print a line of its own,
// such as a forged "PASS: 999 passed", where the harness prints its name.
func PeerText(s string) string {
	if strings.IndexFunc(s, unsafeInLine) < 0 && len(s) <= maxPeerText {
		return s
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == maxPeerText {
			b.WriteString("…")
			break
		}
		n++
		switch {
		case unsafeInLine(r) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeInLine(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unsafeInLine reports whether r would break a line of output or change
// how the terminal lays it out.
func unsafeInLine(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029' || r == unicode.ReplacementChar
}
