package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// DecodeBounded decodes a transcript as a JSON report holds it (an array
// of entries) keeping only its first head and its last tail entries, and
// returns them, in order, with the count of all its entries. Memory is
// bounded by what head and tail entries hold, however many entries raw
// has: a report's reader can keep a transcript undecoded and decode what
// a page shows of it. null or an empty raw is no entry.
func DecodeBounded(raw []byte, head, tail int) ([]Entry, int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, 0, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil {
		return nil, 0, err
	} else if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, 0, fmt.Errorf("a transcript is an array of entries, not %v", tok)
	}
	var first []Entry
	// The entries past the head are read past, their offsets kept for
	// the last tail of them, which are decoded at the end: an entry is
	// decoded only if it is returned.
	ring := make([]int64, 0, tail)
	next, total := 0, 0 // ring's oldest slot once full
	for dec.More() {
		off := dec.InputOffset()
		total++
		if len(first) < head {
			var e Entry
			if err := dec.Decode(&e); err != nil {
				return nil, 0, fmt.Errorf("entry %d: %w", total, err)
			}
			first = append(first, e)
			continue
		}
		if err := dec.Decode(&readPast{}); err != nil {
			return nil, 0, fmt.Errorf("entry %d: %w", total, err)
		}
		switch {
		case tail == 0:
		case len(ring) < tail:
			ring = append(ring, off)
		default:
			ring[next] = off
			next = (next + 1) % tail
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, 0, err
	}
	out := first
	for _, off := range append(ring[next:], ring[:next]...) {
		// An offset is where the decoder stood before the entry: the
		// comma and spaces before it come first.
		rest := bytes.TrimLeft(raw[off:], ", \t\r\n")
		var e Entry
		if err := json.NewDecoder(bytes.NewReader(rest)).Decode(&e); err != nil {
			return nil, 0, err
		}
		out = append(out, e)
	}
	return out, total, nil
}

// readPast is a JSON value read past and kept nowhere.
type readPast struct{}

func (*readPast) UnmarshalJSON([]byte) error { return nil }
