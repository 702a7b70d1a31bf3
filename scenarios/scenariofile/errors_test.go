package scenariofile

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// head is a valid server-role header; steps follow it from line 5 on.
const head = `apiVersion: xdsconform.io/v1alpha1
kind: Scenario
id: server/test/errors
title: a scenario with one thing wrong
`

const clientHead = `apiVersion: xdsconform.io/v1alpha1
kind: Scenario
id: client/test/errors
title: a scenario with one thing wrong
`

// A file that cannot run is a usage error of one line, FILE:LINE: what is
// wrong, pointing at the offending node.
func TestErrorsPointAtTheLine(t *testing.T) {
	for _, c := range []struct {
		name, file string
		line       int
		want       string
	}{
		{"not YAML", head + "steps: [\n  - set: {type: EDS\n", 5, "not YAML"},
		{"tab indentation", head + "steps:\n\t- set: {}\n", 6, "not YAML"},
		// The parser names the mapping an over-indented or under-indented
		// key breaks (line 6, or the document's first line); the error
		// points at the key.
		{"key indented too little", head + "steps:\n  - subscribe:\n      type: EDS\n     names: [a]\n", 8, "not YAML: did not find expected key"},
		{"key indented too far", "apiVersion: xdsconform.io/v1alpha1\nkind: Scenario\n  id: server/test/errors\n", 3, "not YAML: mapping values are not allowed"},
		{"key indented too far in a later document", head + "steps:\n  - settle: {type: EDS}\n---\n" + head + "  steps:\n", 12, "not YAML"},
		{"empty file", "# nothing\n", 1, "no scenario in the file"},
		{"nested too deep", "steps: " + strings.Repeat("[", 20000), 1, "not YAML: exceeded max depth"},
		{"not a mapping", "- a\n- b\n", 1, "a scenario is a mapping"},
		{"wrong apiVersion", strings.Replace(head, "v1alpha1", "v9", 1) + "steps:\n  - settle: {type: EDS}\n", 1, `apiVersion: value must be 'xdsconform.io/v1alpha1'`},
		{"missing title", strings.Replace(head, "title: a scenario with one thing wrong\n", "", 1) + "steps:\n  - settle: {type: EDS}\n", 1, `missing "title"`},
		{"bad id", strings.Replace(head, "server/test/errors", "server/Test", 1) + "steps:\n  - settle: {type: EDS}\n", 3, "id: "},
		{"unknown rule", head + "steps:\n  - set: {type: EDS, name: a, revision: 1}\n  - subscribe: {type: EDS, names: [a]}\n  - expect: {type: EDS, rule: NOPE-1}\n", 8, `unknown rule "NOPE-1"`},
		{"unknown rule in requirements", head + "requirements: [RES-2, NOPE-2]\nsteps:\n  - settle: {type: EDS}\n", 5, `unknown rule "NOPE-2"`},
		{"rule of the other side", head + "steps:\n  - subscribe: {type: EDS, names: [a]}\n  - expect: {type: EDS, rule: ACK-6}\n", 7, "rule ACK-6 binds the client"},
		{"unknown step", head + "steps:\n  - set: {type: EDS, name: a, revision: 1}\n  - frobnicate: {type: EDS}\n", 7, `unknown step "frobnicate" (a server step is one of: set, delete, subscribe`},
		{"unknown client step", clientHead + "steps:\n  - chain: {upTo: LDS}\n  - set: {type: EDS, name: a, revision: 1}\n", 7, `unknown step "set" (a client step is one of: chain, serve`},
		{"unknown key in a step", head + "steps:\n  - subscribe:\n      type: EDS\n      nmes: [a]\n", 8, `steps[0].subscribe: unknown key "nmes"`},
		{"two actions in a step", head + "steps:\n  - set: {type: EDS, name: a, revision: 1}\n    settle: {type: EDS}\n", 6, "a step has exactly one action, this one has 2 (set, settle)"},
		{"unknown type", head + "steps:\n  - settle: {type: XDS}\n", 6, "steps[0].settle.type: value must be one of"},
		{"revision zero", head + "steps:\n  - set: {type: EDS, name: a, revision: 0}\n", 6, "steps[0].set.revision: minimum"},
		{"undefined label", head + "steps:\n  - set: {type: EDS, name: a, revision: 1}\n  - subscribe: {type: EDS, names: [a]}\n  - expect: {type: EDS, as: first}\n  - ack: {of: second}\n", 9, `undefined label "second"`},
		{"label used before its step", head + "steps:\n  - subscribe: {type: EDS, names: [a], nonce: $first.nonce}\n  - expect: {type: EDS, as: first, rule: RES-2}\n", 6, `undefined label "first"`},
		{"not a reference", head + "steps:\n  - subscribe: {type: EDS, names: [a]}\n  - expect: {type: EDS, as: first}\n  - subscribe: {type: EDS, names: [b], nonce: $first.version}\n", 8, `"$first.version" is not a reference: want $LABEL.nonce`},
		{"label defined twice", head + "steps:\n  - subscribe: {type: EDS, names: [a]}\n  - expect: {type: EDS, as: r}\n  - expect: {type: EDS, as: r}\n", 8, `label "r" is defined twice`},
		{"unknown variant", head + "variants: [sotw-ads, sotw-rest]\nsteps:\n  - settle: {type: EDS}\n", 5, "variants[1]: value must be one of"},
		{"removed in SotW", head + "variants: [sotw-ads]\nsteps:\n  - subscribe: {type: EDS, names: [a]}\n  - expect: {type: EDS, removed: [a]}\n", 8, "removed: only delta responses list removals"},
		{"VHDS in SotW", head + "steps:\n  - subscribe: {type: VHDS, names: [a]}\n", 6, "VHDS is carried over delta only"},
		{"level not the headline's", head + "level: MUST\nsteps:\n  - subscribe: {type: EDS, names: [a]}\n  - expect: {type: EDS}\n  - never: {type: EDS, why: nothing changed, rule: UPD-1}\n", 5, "level MUST, but the headline rule UPD-1 is SHOULD"},
		{"no rule at all", head + "steps:\n  - settle: {type: EDS}\n", 5, "no step checks a rule"},
		{"unknown need", head + "needs: [fixture, teleport]\nsteps:\n  - subscribe: {type: EDS, names: [a]}\n  - expect: {type: EDS}\n", 5, `unknown need "teleport"`},
		{"anchor", head + "steps:\n  - set: &s {type: EDS, name: a, revision: 1}\n  - set: *s\n", 6, "anchors and aliases"},
		{"key given twice", head + "steps:\n  - set: {type: EDS, type: CDS, name: a, revision: 1}\n", 6, `key "type" is given twice`},
		{"ID twice", head + "steps:\n  - subscribe: {type: EDS, names: [a]}\n  - expect: {type: EDS}\n---\n" + head + "steps:\n  - subscribe: {type: EDS, names: [a]}\n  - expect: {type: EDS}\n", 11, "scenario server/test/errors is defined twice (first in f.yaml:3)"},
		{"serve version not a string", clientHead + "steps:\n  - chain: {upTo: LDS}\n  - serve: {type: LDS, version: 2}\n", 7, `steps[1].serve.version: got number, want string (quote it: "2")`},
		{"ack of another type", clientHead + "steps:\n  - serve: {type: LDS, version: \"1\", as: l}\n  - expect: {type: CDS, ack: l}\n", 7, "l labels an LDS response, but the step expects a CDS request"},
		// A barrier is a precondition: one a correct server may leave
		// unanswered would block the pair on a rule it did not break.
		{"barrier on a name never set", head + "steps:\n  - subscribe: {type: EDS, names: [a]}\n  - barrier: {type: EDS, name: bar}\n", 7, `barrier: EDS "bar" is not set at this step`},
		{"barrier on a deleted name", head + "steps:\n  - set: {type: EDS, name: bar, revision: 1}\n  - delete: {type: EDS, name: bar}\n  - barrier: {type: EDS, name: bar}\n", 8, "a correct server owes no resource that does not exist"},
		{"barrier on the wildcard", head + "steps:\n  - barrier: {type: CDS, name: \"*\"}\n", 6, `barrier: "*" is the wildcard`},
		{"SotW barrier on a name subscribed", head + "variants: [sotw-ads]\nsteps:\n  - set: {type: EDS, name: bar, revision: 1}\n  - subscribe: {type: EDS, names: [bar]}\n  - expect: {type: EDS, ack: true}\n  - barrier: {type: EDS, name: bar}\n", 10, "already subscribed on the SotW stream: a request naming it again does not change the subscription, so a correct server owes no response"},
		{"delta barrier on a name subscribed", head + "variants: [delta-ads]\nsteps:\n  - set: {type: EDS, name: bar, revision: 1}\n  - subscribe: {type: EDS, names: [bar]}\n  - expect: {type: EDS, ack: true}\n  - barrier: {type: EDS, name: bar}\n", 10, "already subscribed on the delta stream: subscribing it again rests on DELTA-3's resend"},
		{"the same barrier twice", head + "steps:\n  - set: {type: EDS, name: bar, revision: 1}\n  - barrier: {type: EDS, name: bar}\n  - barrier: {type: EDS, name: bar}\n", 8, `EDS "bar" is already subscribed`},
		{"invalid route", clientHead + "steps:\n  - serve: {type: RDS, version: \"1\", resources: [{name: route, revision: 1, invalid: true}]}\n", 6, "invalid: the catalogue builds invalid listeners and clusters only"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.file), "f.yaml")
			require.Error(t, err)
			var fe *Error
			require.True(t, errors.As(err, &fe), "%T: %v", err, err)
			assert.Equal(t, c.line, fe.Line, "%v", err)
			assert.Contains(t, err.Error(), c.want)
			assert.True(t, strings.HasPrefix(err.Error(), fmt.Sprintf("f.yaml:%d: ", fe.Line)), "%v", err)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

// A barrier on a name the stream no longer subscribes, or on a new stream,
// is owed its answer: the compiler takes it.
func TestBarriersOwedAnAnswerCompile(t *testing.T) {
	for name, steps := range map[string]string{
		"after an unsubscribe": "  - set: {type: EDS, name: bar, revision: 1}\n  - subscribe: {type: EDS, names: [bar]}\n  - expect: {type: EDS, ack: true}\n  - unsubscribe: {type: EDS, names: [bar]}\n  - barrier: {type: EDS, name: bar}\n",
		"after a reconnect":    "  - set: {type: EDS, name: bar, revision: 1}\n  - barrier: {type: EDS, name: bar}\n  - reconnect: {type: EDS}\n  - barrier: {type: EDS, name: bar}\n",
		"on another type":      "  - set: {type: CDS, name: bar, revision: 1}\n  - subscribe: {type: EDS, names: [bar]}\n  - barrier: {type: CDS, name: bar}\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(head+"requirements: [RES-4]\nsteps:\n"+steps), "f.yaml")
			require.NoError(t, err)
		})
	}
}

// maxListItems, checked before the schema, is the schema's own bound: no
// list the schema accepts is refused by it, and none the schema would
// refuse for its length is validated item by item first.
func TestListBoundIsTheSchemas(t *testing.T) {
	most := 0
	for _, m := range regexp.MustCompile(`"maxItems":\s*(\d+)`).FindAllStringSubmatch(string(Schema), -1) {
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		most = max(most, n)
	}
	assert.Equal(t, most, maxListItems)

	var b strings.Builder
	b.WriteString(head + "steps:\n")
	for range maxListItems + 1 {
		b.WriteString("  - settle: {type: EDS}\n")
	}
	_, err := Parse([]byte(b.String()), "f.yaml")
	var fe *Error
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, 6, fe.Line)
	assert.Contains(t, fe.Msg, "a list of 1001 items: no list of a scenario holds more than 1000")
}

// A file is refused before it is parsed when it is larger than
// MaxFileBytes or holds more nodes than maxNodes: parsed, a YAML node
// costs hundreds of bytes, so a file of short values would cost far more
// than its size.
func TestSizeRefusedBeforeParsing(t *testing.T) {
	for _, c := range []struct {
		name, file, want string
	}{
		{"too large", head + "steps:\n" + strings.Repeat("# a comment of no node at all\n", MaxFileBytes/29+1), "larger than 512 KiB"},
		{"too many nodes", head + "steps:\n  - subscribe: {type: EDS, names: [" + strings.Repeat("a,", maxNodes) + "a]}\n", "more than 30000 YAML nodes"},
	} {
		_, err := Parse([]byte(c.file), "f.yaml")
		var fe *Error
		require.ErrorAs(t, err, &fe, c.name)
		assert.Equal(t, 1, fe.Line, c.name)
		assert.Contains(t, fe.Msg, c.want, c.name)
	}
}
