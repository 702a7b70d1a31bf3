package replay

import (
	"fmt"
	"io"

	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/transcript"
)

// Difference is one place where the target did not do what the
// recording shows.
type Difference struct {
	// Entry is the file's entry the difference is at, from 1 (0: after
	// the last entry, in the quiet window).
	Entry int
	// Stream is the recorded stream's name.
	Stream string
	// What says, in words, what the recording had and the target did.
	What string
}

// String renders the difference on one line.
func (d Difference) String() string {
	where := "after the last entry"
	if d.Entry > 0 {
		where = fmt.Sprintf("entry %d", d.Entry)
	}
	if d.Stream != "" {
		where += " (" + d.Stream + ")"
	}
	return where + ": " + d.What
}

// maxDifferences bounds the differences a result keeps: a target that
// differs from the first response on differs at every later one, and the
// first ones say why.
const maxDifferences = 200

// Result is the outcome of a replay.
type Result struct {
	// Against describes the target.
	Against string
	// Steps is how many of the plan's steps were replayed.
	Steps int
	// Differences are where the target behaved differently, in order
	// (at most maxDifferences; Dropped counts the rest).
	Differences []Difference
	Dropped     int
	// Notes say what was not compared, and why.
	Notes []string
	// Transcript is the replay's own wire record.
	Transcript *transcript.Transcript
}

// Same reports whether the target did what the recording shows.
func (r *Result) Same() bool { return len(r.Differences) == 0 && r.Dropped == 0 }

func (r *Result) differ(entry int, stream, format string, args ...any) {
	if len(r.Differences) >= maxDifferences {
		r.Dropped++
		return
	}
	r.Differences = append(r.Differences, Difference{Entry: entry, Stream: stream, What: transcript.Scrub(fmt.Sprintf(format, args...))})
}

func (r *Result) note(format string, args ...any) {
	if len(r.Notes) < maxDifferences {
		r.Notes = append(r.Notes, transcript.Scrub(fmt.Sprintf(format, args...)))
	}
}

// Write prints the result: the notes, then one line per difference, then
// a summary line.
func (r *Result) Write(w io.Writer) {
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, d := range r.Differences {
		fmt.Fprintf(w, "DIFF %s\n", d)
	}
	if r.Dropped > 0 {
		fmt.Fprintf(w, "DIFF … and %s more\n", wording.Count(int64(r.Dropped), "difference", "differences"))
	}
	n := int64(len(r.Differences) + r.Dropped)
	if n == 0 {
		fmt.Fprintf(w, "replayed %s against %s: no difference\n", wording.Count(int64(r.Steps), "step", "steps"), r.Against)
		return
	}
	fmt.Fprintf(w, "replayed %s against %s: %s\n", wording.Count(int64(r.Steps), "step", "steps"), r.Against, wording.Count(n, "difference", "differences"))
}
