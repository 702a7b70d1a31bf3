package main

import (
	"net/url"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/xdsconform/xdsconform/internal/process"
	"github.com/xdsconform/xdsconform/results"
)

// notRerun are the flags a re-run command leaves out: those that select
// pairs (--run names the one pair), those that write or label reports (a
// re-run must not overwrite CI's; --impl-* too), and those that only shape
// the console.
var notRerun = map[string]bool{
	"run": true, "skip": true, "variant": true, "level": true,
	"junit": true, "json": true, "transcripts": true, "implementation": true,
	"parallel": true, "verbose": true, "color": true, "help": true,
}

// leftOut reports whether a re-run command leaves flag name out.
func leftOut(name string) bool { return notRerun[name] || strings.HasPrefix(name, "impl-") }

// elided stands for a value a re-run command does not show.
const elided = "…"

// rerunCommand returns the function that gives, for one result, the
// command line running that pair alone again: the command as it was
// invoked, with the flags that were given, in long form, and --run with the
// pair's ID[variant]. Values that may hold secrets are elided: those of
// --metadata and --container-env (KEY=…), the arguments of --client-cmd
// (its program name stays), a URL's user info. What is left still goes
// through the secret memory before the console prints it.
func rerunCommand(c *cobra.Command) func(results.Result) string {
	var given []*pflag.Flag
	c.Flags().Visit(func(fl *pflag.Flag) {
		if !leftOut(fl.Name) {
			given = append(given, fl)
		}
	})
	// What the command runs against first, the rest in name order.
	slices.SortStableFunc(given, func(a, b *pflag.Flag) int { return rerunRank(a.Name) - rerunRank(b.Name) })
	words := []string{c.Root().Name(), c.Name()}
	for _, fl := range given {
		if fl.Value.Type() == "bool" {
			if fl.Value.String() == "true" {
				words = append(words, "--"+fl.Name)
			} else {
				words = append(words, "--"+fl.Name+"=false")
			}
			continue
		}
		var values []string
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		} else {
			values = []string{fl.Value.String()}
		}
		for _, v := range values {
			words = append(words, "--"+fl.Name, shellWord(elideValue(fl.Name, v)))
		}
	}
	base := strings.Join(words, " ")
	return func(r results.Result) string {
		return base + " --run " + shellWord(r.FullName())
	}
}

// rerunRank orders the flags of a re-run command: the target's first.
func rerunRank(name string) int {
	if i := slices.Index([]string{"target", "client-cmd", "client-wait", "fixture"}, name); i >= 0 {
		return i
	}
	return 10
}

// elideValue is v, a value of flag name, with what may be a secret
// replaced by elided.
func elideValue(name, v string) string {
	switch name {
	case "metadata", "container-env":
		if k, _, ok := strings.Cut(v, "="); ok {
			return k + "=" + elided
		}
		return elided
	case "client-cmd":
		return elideCommand(v)
	case "rest-target":
		if u, err := url.Parse(v); err == nil && (u.User != nil || u.RawQuery != "") {
			u.User, u.RawQuery = nil, ""
			return u.String()
		}
	}
	return v
}

// elideCommand keeps a shell command's program name and elides the rest:
// its arguments may carry a token, and the environment assignments before
// it (TOKEN=… prog) their values.
func elideCommand(cmd string) string {
	fields := strings.Fields(cmd)
	var out []string
	for i, f := range fields {
		if k, _, ok := strings.Cut(f, "="); ok && k != "" && !strings.ContainsAny(k, "/'\"$") {
			out = append(out, k+"="+elided) // an assignment before the program
			continue
		}
		out = append(out, f)
		if i < len(fields)-1 {
			out = append(out, elided)
		}
		break
	}
	return strings.Join(out, " ")
}

// shellWord quotes s for a POSIX shell unless it is made only of
// characters no shell treats specially, so that common values read plain
// (--target 127.0.0.1:18000) and an ID[variant] is not globbed.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:@%+=,") == "" {
		return s
	}
	return process.Quote(s)
}
