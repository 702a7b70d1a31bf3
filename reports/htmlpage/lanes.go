package htmlpage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xdsconform/xdsconform/reports/verdict"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// transcriptView is a pair's transcript drawn as a sequence diagram: the
// xDS client's lane on the left, the management server's on the right,
// stream events across both.
type transcriptView struct {
	// ClientLabel and ServerLabel name the lanes: which of the two the
	// harness played and which the target.
	ClientLabel, ServerLabel string
	Entries                  []entryView
	Count                    int
}

// Sides of an entry in the diagram.
const (
	sideClient = "client" // sent by the xDS client
	sideServer = "server" // sent by the management server
	sideEvent  = "event"  // something that happened to a stream
	sideFold   = "fold"   // a run of repeats folded into one marker
	sideOther  = "other"  // a direction this version does not know
)

// entryView is one transcript entry.
type entryView struct {
	At        string
	Stream    string
	StreamTag int // colour of the stream: its first-seen order, mod 6
	Side      string
	Direction string
	Kind      string
	Chips     []keyValue
	Note      string
	JSON      string
	// Extra are fields of the entry this page does not know (a newer
	// transcript's, such as a count of folded repeats), shown as they are.
	Extra []keyValue
	// Gap marks the line that stands for entries the page left out.
	Gap bool
}

// knownEntryKeys are the JSON fields of transcript.Entry the page draws
// on its own; any other is shown as an extra.
var knownEntryKeys = map[string]bool{"at_ns": true, "stream": true, "direction": true, "kind": true, "message": true, "note": true,
	"until_ns": true, "folded": true, "cycle": true}

// harnessIsClient says which side the harness played for r: the server
// suite's scenarios (and a server run's) play the xDS client.
func harnessIsClient(r results.Result, role string) bool {
	switch verdict.RoleOf(r) {
	case verdict.Client:
		return false
	case verdict.Server:
		return true
	}
	return role != verdict.Client
}

// transcript renders r's transcript, of which entries are all or its
// first headEntries and last tailEntries of total, within what is left of
// the page's budget; nil when none is left.
func (b *builder) transcript(entries []transcript.Entry, total int, r results.Result, role string) *transcriptView {
	if b.budget <= 0 {
		return nil
	}
	entries = transcript.ScrubEntries(entries)
	tv := &transcriptView{Count: total}
	asClient := harnessIsClient(r, role)
	if asClient {
		tv.ClientLabel, tv.ServerLabel = "xDS client · harness", "management server · target"
	} else {
		tv.ClientLabel, tv.ServerLabel = "xDS client · target", "management server · harness"
	}
	shown := entries
	var gap int
	if total > headEntries+tailEntries {
		gap = total - headEntries - tailEntries
		if len(entries) == total { // all of it: keep the first and the last
			shown = slices.Concat(entries[:headEntries], entries[len(entries)-tailEntries:])
		}
	}
	streams := map[string]int{}
	for i, e := range shown {
		if gap > 0 && i == headEntries {
			tv.Entries = append(tv.Entries, entryView{Gap: true, Side: sideEvent,
				Note: fmt.Sprintf("%d entries left out here (the page shows the first %d and the last %d); the JSON report has them", gap, headEntries, tailEntries)})
		}
		ev := entryOf(e, asClient)
		tag, ok := streams[ev.Stream]
		if !ok {
			tag = len(streams) % 6
			streams[ev.Stream] = tag
		}
		ev.StreamTag = tag
		cost := len(ev.JSON) + len(ev.Note) + len(ev.Stream) + len(ev.Kind) + 64
		for _, c := range ev.Chips {
			cost += len(c.Key) + len(c.Value)
		}
		for _, c := range ev.Extra {
			cost += len(c.Key) + len(c.Value)
		}
		if cost > b.budget {
			b.spent = true
			tv.Entries = append(tv.Entries, entryView{Gap: true, Side: sideEvent,
				Note: fmt.Sprintf("the rest of this transcript (%d entries) is in the JSON report: this page's transcripts already take %d MiB", len(shown)-i, pageBudget>>20)})
			break
		}
		b.budget -= cost
		tv.Entries = append(tv.Entries, ev)
	}
	return tv
}

// entryOf draws one entry: its side from its direction and the role the
// harness played, a one-line summary of its message, and the message.
func entryOf(e transcript.Entry, harnessClient bool) entryView {
	ev := entryView{
		At:        formatOffset(e.At),
		Stream:    clip(e.Stream, maxChip),
		Direction: clip(string(e.Direction), maxChip),
		Kind:      clip(e.Kind, maxChip),
		Note:      clip(e.Note, transcript.NoteBytes),
	}
	switch {
	case e.Direction == transcript.Event:
		ev.Side = sideEvent
	case e.Direction == transcript.Folded:
		// Its note says what it stands for and the time it spans, in
		// words.
		ev.Side = sideFold
	case e.Direction == transcript.Sent && harnessClient, e.Direction == transcript.Received && !harnessClient:
		ev.Side = sideClient
	case e.Direction == transcript.Sent, e.Direction == transcript.Received:
		ev.Side = sideServer
	default:
		ev.Side = sideOther
	}
	if len(e.Message) > 0 {
		ev.Chips = chips(e.Message)
		ev.JSON = prettyJSON(e.Message)
	}
	ev.Extra = extraFields(e)
	return ev
}

// formatOffset renders a time since the transcript started.
func formatOffset(d time.Duration) string {
	return fmt.Sprintf("%.3f ms", float64(d.Microseconds())/1000)
}

// prettyJSON indents a message for reading, within maxEntryJSON; a
// message that is not JSON (a report written by hand, say) is shown as
// text.
func prettyJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return clip(string(raw), maxEntryJSON)
	}
	return clip(buf.String(), maxEntryJSON)
}

// extraFields are e's JSON fields this page does not draw itself.
func extraFields(e transcript.Entry) []keyValue {
	e.Message = nil
	b, err := json.Marshal(e)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	var kvs []keyValue
	for _, k := range sortedKeys(m) {
		if knownEntryKeys[k] {
			continue
		}
		if v := plainValue(m[k]); v != "" {
			kvs = append(kvs, keyValue{clip(k, maxChip), clip(v, maxChip)})
		}
	}
	return kvs
}

// chips summarises an xDS message in a few labelled values: its type,
// version, nonces, the names it asks for or carries, and a NACK's error.
// The labels are the proto field names, which is what the rules and the
// messages of failures speak of.
func chips(raw json.RawMessage) []keyValue {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	var kvs []keyValue
	add := func(k, v string) {
		if v != "" {
			kvs = append(kvs, keyValue{k, clip(v, maxChip)})
		}
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(m[k], &s)
		return s
	}
	if t := str("type_url"); t != "" {
		add("type", shortType(t))
	}
	add("version_info", quoted(m, "version_info"))
	add("nonce", quoted(m, "nonce"))
	add("response_nonce", quoted(m, "response_nonce"))
	add("system_version_info", quoted(m, "system_version_info"))
	add("resource_names", names(m["resource_names"]))
	add("subscribe", names(m["resource_names_subscribe"]))
	add("unsubscribe", names(m["resource_names_unsubscribe"]))
	add("removed_resources", names(m["removed_resources"]))
	if rs, ok := m["resources"]; ok {
		add("resources", resourceNames(rs))
	}
	if ed, ok := m["error_detail"]; ok {
		var st struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(ed, &st)
		add("error_detail", fmt.Sprintf("code %d: %s", st.Code, st.Message))
	}
	return kvs
}

// quoted is the string field k of m in quotes ("" when absent), so an
// empty version or nonce reads as "" and not as nothing.
func quoted(m map[string]json.RawMessage, k string) string {
	var s string
	if json.Unmarshal(m[k], &s) != nil {
		return ""
	}
	return fmt.Sprintf("%q", clip(s, maxChip))
}

// shortType is a type URL's message name: "Cluster" for
// type.googleapis.com/envoy.config.cluster.v3.Cluster.
func shortType(t string) string {
	if i := strings.LastIndexAny(t, "/."); i >= 0 && i < len(t)-1 {
		return t[i+1:]
	}
	return t
}

// names renders a list of strings: its first few, and how many more.
func names(raw json.RawMessage) string {
	var ss []string
	if len(raw) == 0 || json.Unmarshal(raw, &ss) != nil {
		return ""
	}
	return listed(ss)
}

func listed(ss []string) string {
	if len(ss) == 0 {
		return "[]"
	}
	shown := ss[:min(len(ss), maxChipItems)]
	qs := make([]string, len(shown))
	for i, s := range shown {
		qs[i] = clip(s, maxChip/2)
	}
	out := strings.Join(qs, ", ")
	if len(ss) > len(shown) {
		out += fmt.Sprintf(" and %d more", len(ss)-len(shown))
	}
	return out
}

// resourceNames renders a response's resources: how many, and the names
// of the first few (a delta Resource's name, or the name inside the
// resource, as SotW resources carry theirs).
func resourceNames(raw json.RawMessage) string {
	var rs []map[string]json.RawMessage
	if json.Unmarshal(raw, &rs) != nil {
		return ""
	}
	var ns []string
	// A resource's name is its "name", or "cluster_name" for a
	// ClusterLoadAssignment.
	name := func(m map[string]json.RawMessage) string {
		var n string
		if json.Unmarshal(m["name"], &n) != nil || n == "" {
			_ = json.Unmarshal(m["cluster_name"], &n)
		}
		return n
	}
	for _, r := range rs {
		n := name(r)
		if n == "" {
			var inner map[string]json.RawMessage
			if json.Unmarshal(r["resource"], &inner) == nil {
				n = name(inner)
			}
		}
		if n == "" {
			n = "?"
		}
		ns = append(ns, n)
	}
	if len(ns) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d: %s", len(ns), listed(ns))
}

// plainValue renders a JSON value for reading: a string as itself, a list
// of strings comma-separated, anything else as compact JSON.
func plainValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		return strings.Join(ss, ", ")
	}
	if string(raw) == "null" {
		return ""
	}
	return string(raw)
}
