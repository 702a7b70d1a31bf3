package transcript

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// FoldedKind is the Kind of a fold marker.
const FoldedKind = "folded"

// Folding bounds. A target caught in a loop (go-control-plane resending a
// NACKed snapshot at once, say, and the harness NACKing it again) repeats
// a cycle of one to a few entries thousands of times; a report needs the
// first cycle (how the loop started), the last (how it ended), and how
// many there were in between and over what time, not each one.
const (
	// MaxFoldCycle is the longest cycle of entries Fold recognises: a
	// response and its ACK or NACK are two, a response, an ACK and an
	// event three.
	MaxFoldCycle = 4
	// MinFolded is the fewest entries a fold takes out: a short repeat
	// (a client that asks twice) reads better as it is.
	MinFolded = 4
)

// Fold returns entries with every run of repeated cycles folded: when a
// cycle of one to MaxFoldCycle consecutive entries on one stream repeats
// back to back, and the repeats between the first and the last cycle
// hold at least MinFolded entries, those repeats are replaced by one fold
// marker. Entries repeat when they have the same stream, direction and
// kind and the same message and note once normalised (see foldKey): a
// resend that differs only in its nonce or version is a repeat, one whose
// resources differ is not. The first and last cycles are kept as
// recorded, so their nonces, versions and times can still be read.
//
// A fold marker is an Entry with Direction Folded and Kind FoldedKind, on
// the stream of the cycle; At is the time of the first entry folded,
// Until that of the last; Folded is how many entries it stands for and
// Cycle how many entries make one repeat (so Folded/Cycle repeats); Note
// says the same in words, so a renderer that shows notes needs nothing
// more. Entries are never reordered, and entries that are not repeats are
// returned as they are. entries itself is not modified; when nothing
// folds it is returned as is.
func Fold(entries []Entry) []Entry {
	if len(entries) < 2+MinFolded {
		return entries
	}
	ids := foldIDs(entries)
	var out []Entry
	copied := 0 // entries[:copied] are in out (when out is not nil)
	for i := 0; i < len(entries); {
		cycle, reps := longestRepeat(entries, ids, i)
		if cycle == 0 {
			i++
			continue
		}
		if out == nil {
			out = make([]Entry, 0, len(entries))
		}
		out = append(out, entries[copied:i+cycle]...)
		first, last := i+cycle, i+(reps-1)*cycle // folded: entries[first:last]
		out = append(out, marker(entries[first:last], cycle))
		copied = last
		i = last + cycle
	}
	if out == nil {
		return entries
	}
	return append(out, entries[copied:]...)
}

// longestRepeat finds, at entries[i:] (numbered by ids), the cycle length (1 to
// MaxFoldCycle) whose back-to-back repeats cover the most entries, and
// how many times it occurs; cycle is 0 when no repeat is long enough to
// fold. A shorter cycle wins a tie (a cycle of two that repeats is also
// one of four).
func longestRepeat(entries []Entry, ids []int, i int) (cycle, reps int) {
	best := 0
	for c := 1; c <= MaxFoldCycle && i+2*c <= len(entries); c++ {
		// Every entry of the cycle on one stream, so that the marker
		// stands on it; ids carry the stream, so the repeats are too.
		if entries[i+c-1].Stream != entries[i].Stream {
			break
		}
		n := c
		for i+n < len(ids) && ids[i+n] == ids[i+n-c] {
			n++
		}
		r := n / c
		if folded := (r - 2) * c; folded >= MinFolded && r*c > best {
			best, cycle, reps = r*c, c, r
		}
	}
	return cycle, reps
}

// foldIDs numbers entries so that two have the same number when they
// repeat each other (see foldKey); a fold marker or an entry already
// folded never repeats anything.
func foldIDs(entries []Entry) []int {
	ids := make([]int, len(entries))
	seen := map[string]int{}
	for i, e := range entries {
		if e.Direction == Folded {
			ids[i] = -1 - i // unique
			continue
		}
		k := foldKey(e)
		id, ok := seen[k]
		if !ok {
			id = len(seen)
			seen[k] = id
		}
		ids[i] = id
	}
	return ids
}

// churnFields are the fields of a rendered message whose values change on
// every resend of the same content: nonces and versions.
var churnFields = regexp.MustCompile(`"(nonce|response_nonce|version_info|system_version_info|version)":"(?:[^"\\]|\\.)*"`)

// digits are counters in a note ("3 more messages", a stream's count).
var digits = regexp.MustCompile(`[0-9]+`)

// foldKey is what makes two entries repeats of each other: the same
// stream, direction and kind, the same message once its nonces and
// versions are blanked, and the same note once its numbers are. Only
// those fields are blanked in messages: a resource whose contents differ
// (a new timeout, a new port) is a change worth showing, not a repeat.
func foldKey(e Entry) string {
	var b strings.Builder
	b.WriteString(e.Stream)
	b.WriteByte(0)
	b.WriteString(string(e.Direction))
	b.WriteByte(0)
	b.WriteString(e.Kind)
	b.WriteByte(0)
	b.WriteString(churnFields.ReplaceAllString(string(e.Message), `"$1":""`))
	b.WriteByte(0)
	b.WriteString(digits.ReplaceAllString(e.Note, "#"))
	return b.String()
}

// marker is the fold marker for folded, repeats of a cycle of cycle
// entries.
func marker(folded []Entry, cycle int) Entry {
	from, until := folded[0].At, folded[len(folded)-1].At
	kinds := make([]string, cycle)
	for j := range cycle {
		kinds[j] = describe(folded[j])
	}
	what := "the entry before"
	if cycle > 1 {
		what = fmt.Sprintf("the %d entries before", cycle)
	}
	return Entry{
		At: from, Until: until, Stream: folded[0].Stream, Direction: Folded, Kind: FoldedKind,
		Folded: len(folded), Cycle: cycle,
		Note: fmt.Sprintf("%d entries folded: %s (%s) repeated %d more times from %s to %s, the same but for nonces and versions; the entries after are the last repeat",
			len(folded), what, strings.Join(kinds, ", "), len(folded)/cycle, formatAt(from), formatAt(until)),
	}
}

// describe names an entry for a fold's note: its kind and direction.
func describe(e Entry) string {
	if e.Direction == Event {
		return "event"
	}
	return e.Kind + " " + string(e.Direction)
}

// formatAt is a transcript time as Format prints it.
func formatAt(d time.Duration) string {
	return fmt.Sprintf("%.3fms", float64(d.Microseconds())/1000)
}
