package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/internal/process"
	"github.com/xdsconform/xdsconform/results"
)

// shellWords splits a command line as a POSIX shell would, for the forms
// the re-run line uses: plain words, and single-quoted ones in which a
// quote is closed, escaped with a backslash and reopened.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case quoted && ch == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(ch)
		case ch == '\'':
			quoted, inWord = true, true
		case ch == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case ch == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	require.False(t, quoted, "unbalanced quotes in %q", line)
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

var failLine = regexp.MustCompile(`(?m)^FAIL  (\S+) \(\d+ms\): .*\n      re-run: (.*)$`)

// A failing pair's name, as the console prints it, pasted back into --run
// selects that pair and no other; and the re-run line under it, run as
// the shell would split it, runs that pair alone again, with the flags
// that were given and the secrets they carried elided.
func TestPrintedNameAndRerunSelectThePair(t *testing.T) {
	const secret = "s3cr3t-metadata-value-91f2"
	code, out, stderr := run(t, "server", "--target", "builtin:reference", "--fault", "answer-stale-nonce",
		"--run", "server/nonce/*", "--timeout", "1s", "--metadata", "x-tenant="+secret)
	require.Equal(t, exitFailures, code, stderr)
	assert.NotContains(t, out+stderr, secret)
	m := failLine.FindStringSubmatch(out)
	require.NotNil(t, m, "no FAIL line with a re-run line under it:\n%s", out)
	name, rerun := m[1], m[2]
	assert.Regexp(t, `^server/nonce/[a-z-]+\[[a-z-]+\]$`, name)
	assert.Equal(t, "xdsconform server --target builtin:reference --fault answer-stale-nonce --metadata 'x-tenant=…' --timeout 1s --run '"+name+"'", rerun)

	code, out, stderr = run(t, "server", "--target", "builtin:reference", "--fault", "answer-stale-nonce", "--timeout", "1s", "--run", name)
	require.Equal(t, exitFailures, code, stderr)
	assert.Contains(t, out, "server suite, 1 scenario run against")
	assert.Contains(t, out, "FAIL  "+name+" (")

	words := shellWords(t, rerun)
	require.Equal(t, []string{"xdsconform", "server"}, words[:2])
	code, out, stderr = run(t, words[1:]...)
	require.Equal(t, exitFailures, code, stderr)
	assert.Contains(t, out, "server suite, 1 scenario run against")
	assert.Contains(t, out, "FAIL  "+name+" (")
}

// The re-run command keeps a client command's program name and elides its
// arguments and the values of the assignments before it, and elides every
// --metadata and --container-env value and a URL's user info; report and
// selection flags are left out.
func TestRerunCommandElidesSecrets(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"client", "--client-cmd", "API_TOKEN=tok-8c1d /opt/bin/my-client --token tok-8c1d {{.Target}}", "--junit", "r.xml", "-v", "--skip", "client/dne/*"},
			"xdsconform client --client-cmd 'API_TOKEN=… /opt/bin/my-client …' --run 'client/ack/x[sotw-ads]'"},
		{[]string{"client", "--client-cmd", "./driver", "--client-dir", "drivers/js", "--transcripts", "all", "--impl-name", "x", "--json", "r.json"},
			"xdsconform client --client-cmd ./driver --client-dir drivers/js --run 'client/ack/x[sotw-ads]'"},
		{[]string{"server", "--target", "10.0.0.1:18000", "--metadata", "authorization=Bearer tok-8c1d", "--rest-target", "https://user:tok-8c1d@xds.example:443", "--tls", "--variant", "sotw-ads", "--parallel", "3"},
			"xdsconform server --target 10.0.0.1:18000 --metadata 'authorization=…' --rest-target https://xds.example:443 --tls --run 'client/ack/x[sotw-ads]'"},
		{[]string{"server", "--target", "container:cp", "--container-env", "PASSWORD=tok-8c1d", "--fixture-plaintext=false"},
			"xdsconform server --target container:cp --container-env 'PASSWORD=…' --fixture-plaintext=false --run 'client/ack/x[sotw-ads]'"},
	} {
		c := newServerCmd(nil)
		if tc.args[0] == "client" {
			c = newClientCmd(nil)
		}
		(&cobra.Command{Use: "xdsconform"}).AddCommand(c)
		require.NoError(t, c.ParseFlags(tc.args[1:]))
		got := rerunCommand(c)(results.Result{ID: "client/ack/x", Variant: "sotw-ads"})
		assert.Equal(t, tc.want, got)
		assert.NotContains(t, got, "tok-8c1d")
	}
}

// Colour: auto is on for a terminal only, and NO_COLOR (set to anything)
// or TERM=dumb turn it off; always and never win over both.
func TestColorOn(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		mode string
		tty  bool
		env  func(string) string
		want bool
	}{
		{"auto", true, env("TERM", "xterm-256color"), true},
		{"", true, env(), true},
		{"auto", false, env("TERM", "xterm"), false},
		{"auto", true, env("NO_COLOR", "1"), false},
		{"auto", true, env("TERM", "dumb"), false},
		{"always", false, env("NO_COLOR", "1"), true},
		{"never", true, env(), false},
	} {
		got, err := colorOn(tc.mode, tc.tty, tc.env)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%+v", tc)
	}
	_, err := colorOn("pink", true, env())
	assert.ErrorContains(t, err, `--color "pink": want auto, always or never`)
}

// --color always colours labels and the verdict even into a pipe; the
// default, auto, does not colour what is not a terminal.
func TestColorFlag(t *testing.T) {
	code, out, stderr := run(t, "server", "--target", "builtin:reference", "--run", "server/nonce/non-empty[sotw-ads]", "--color", "always")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "\x1b[32mPASS \x1b[0m server/nonce/non-empty[sotw-ads]")
	assert.Contains(t, out, "\x1b[32mPASS\x1b[0m: 1 passed")
	code, out, stderr = run(t, "server", "--target", "builtin:reference", "--run", "server/nonce/non-empty[sotw-ads]")
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, out, "\x1b")
	checkExitCodes(t, []exitCase{
		{"bad color", []string{"server", "--target", "builtin:reference", "--color", "pink"}, exitUsage, "--color"},
	})
}

// Skipped pairs are summarised by reason, not printed one by one, unless
// -v.
func TestSkipsSummarised(t *testing.T) {
	args := []string{"server", "--target", "builtin:go-control-plane", "--run", "server/nonce/non-empty,server/xdstp/*"}
	code, out, stderr := run(t, args...)
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, out, "SKIP ")
	assert.Regexp(t, `=== Skipped \(\d+, by reason; -v lists each\)\n +\d+  the fixture does not claim feature "xdstp"`, out)
	code, out, stderr = run(t, append(args, "-v")...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "SKIP  server/xdstp/")
}

// An unknown --fault is one line pointing at xdsconform faults, which
// lists them (TestFaultsCommand).
func TestUnknownFaultPointsAtFaults(t *testing.T) {
	checkExitCodes(t, []exitCase{
		{"server", []string{"server", "--target", "builtin:reference", "--fault", "nope"}, exitUsage, `--fault: unknown fault "nope" (xdsconform faults lists them)`},
		{"client", []string{"client", "--target", "builtin:reference", "--fault", "nope"}, exitUsage, `--fault: unknown fault "nope" (xdsconform faults lists them)`},
	})
	_, out, _ := run(t, "faults", "client")
	assert.Contains(t, out, "ack-duplicates")
}

// complete runs cobra's hidden completion command and returns the
// candidates' values, descriptions cut.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	code, out, stderr := run(t, append([]string{"__complete"}, args...)...)
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.NotEmpty(t, lines)
	require.Equal(t, ":4", lines[len(lines)-1], "no file completion: %q", out)
	var values []string
	for _, l := range lines[:len(lines)-1] {
		v, _, _ := strings.Cut(l, "\t")
		values = append(values, v)
	}
	return values
}

func TestCompletion(t *testing.T) {
	assert.Contains(t, complete(t, "server", "--run", "server/nonce/"), "server/nonce/stale-request-ignored")
	assert.Contains(t, complete(t, "server", "--run", "server/no"), "server/nonce/*")
	assert.NotContains(t, complete(t, "server", "--run", "server/nonce/"), "client/ack/ack-accepted")
	assert.Equal(t, []string{"server/nonce/non-empty[sotw-ads]", "server/nonce/non-empty[sotw-pertype]"},
		complete(t, "server", "--skip", "server/nonce/non-empty[sotw-"))
	assert.Equal(t, []string{"server/ack/*,server/nonce/non-empty[delta-ads]"},
		complete(t, "server", "--run", "server/ack/*,server/nonce/non-empty[delta-a"))
	assert.Contains(t, complete(t, "client", "--run", "client/"), "client/ack/*")
	run := complete(t, "run", "--run", "")
	assert.Contains(t, run, "server/nonce/*")
	assert.Contains(t, run, "client/ack/*")
	assert.Equal(t, []string{"sotw-ads,delta-ads", "sotw-ads,delta-pertype"}, complete(t, "run", "--variant", "sotw-ads,d"))
	assert.Contains(t, complete(t, "server", "--fault", "answer-"), "answer-stale-nonce")
	assert.Contains(t, complete(t, "client", "--fault", "ack-"), "ack-duplicates")
	assert.NotContains(t, complete(t, "client", "--fault", ""), "answer-stale-nonce")
	assert.Equal(t, []string{"csds", "admin", "none"}, complete(t, "client", "--observer", ""))
	assert.Equal(t, []string{"auto", "always", "never"}, complete(t, "server", "--color", ""))
}

// A secret in a client command's arguments or environment assignments
// never reaches the console, the re-run line under its failure included.
func TestRerunHidesClientCommandSecrets(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	const secret = "s3cr3t-client-arg-4411"
	cmd := misbehavingClient + "=garbage API_TOKEN=" + secret + " " + process.Quote(exe) + " --token " + secret + " {{.Server}}"
	code, out, stderr := run(t, "client", "--client-cmd", cmd, "--timeout", "1s",
		"--run", "client/stream/client-speaks-first", "--variant", "sotw-ads")
	require.Equal(t, exitFailures, code, stderr)
	assert.NotContains(t, out+stderr, secret)
	elidedCmd := process.Quote(misbehavingClient + "=… API_TOKEN=… " + process.Quote(exe) + " …")
	assert.Contains(t, out, "      re-run: xdsconform client --client-cmd "+elidedCmd+" --timeout 1s --run 'client/stream/client-speaks-first[sotw-ads]'\n")
}
