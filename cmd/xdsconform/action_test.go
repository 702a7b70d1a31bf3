package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/xdsconform/xdsconform/results"
)

// action is the part of a composite action's action.yml these tests run.
type action struct {
	Inputs map[string]struct {
		Default string `yaml:"default"`
	} `yaml:"inputs"`
	Runs struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

type actionStep struct {
	Name  string            `yaml:"name"`
	ID    string            `yaml:"id"`
	If    string            `yaml:"if"`
	Uses  string            `yaml:"uses"`
	With  map[string]string `yaml:"with"`
	Shell string            `yaml:"shell"`
	Run   string            `yaml:"run"`
	Env   map[string]string `yaml:"env"`
}

// expression is a GitHub Actions expression, ${{ … }}.
var expression = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// actionRun is what one use of the action gave: the exit code of the step
// that failed the action (0 if none did), the step summary written, and the
// outputs of each step by id.
type actionRun struct {
	code    int
	summary string
	outputs map[string]map[string]string
}

// runAction runs the steps of ../../action.yml as a runner would, with the
// given inputs over the defaults and bin (holding xdsconform) on PATH, in a
// fresh workspace: each step's env evaluated, its script run by bash as
// GitHub runs composite bash steps, its outputs read from $GITHUB_OUTPUT.
// The steps that use other actions (setting up Go, uploading the artefact)
// and the install step are not run: the test stands in for them.
func runAction(t *testing.T, bin, workspace string, inputs map[string]string) actionRun {
	t.Helper()
	b, err := os.ReadFile("../../action.yml")
	require.NoError(t, err)
	var a action
	require.NoError(t, yaml.Unmarshal(b, &a))
	require.Equal(t, "composite", a.Runs.Using)
	in := map[string]string{}
	for name, i := range a.Inputs {
		in[name] = i.Default
	}
	for name, v := range inputs {
		_, ok := a.Inputs[name]
		require.True(t, ok, "action.yml has no input %q", name)
		in[name] = v
	}
	res := actionRun{outputs: map[string]map[string]string{}}
	eval := func(s string) string {
		return expression.ReplaceAllStringFunc(s, func(m string) string {
			expr := expression.FindStringSubmatch(m)[1]
			switch parts := strings.Split(expr, "."); {
			case len(parts) == 2 && parts[0] == "inputs":
				v, ok := in[parts[1]]
				require.True(t, ok, "unknown input in %s", m)
				return v
			case len(parts) == 4 && parts[0] == "steps" && parts[2] == "outputs":
				return res.outputs[parts[1]][parts[3]]
			case expr == "github.action_path":
				abs, err := filepath.Abs("../..")
				require.NoError(t, err)
				return abs
			case expr == "github.action_ref":
				return ""
			}
			t.Fatalf("the test does not know the expression %s", m)
			return ""
		})
	}
	failed := false
	for i, s := range a.Runs.Steps {
		switch s.If {
		case "":
			if failed {
				continue
			}
		case "always()":
		default:
			t.Fatalf("step %q: the test does not know the condition %q", s.Name, s.If)
		}
		if s.Uses != "" {
			// Not run here; what they are given still has to resolve.
			for _, v := range s.With {
				eval(v)
			}
			continue
		}
		require.Equal(t, "bash", s.Shell, "step %q", s.Name)
		// Inputs reach scripts through env only: an expression in a script
		// is spliced into the shell text, where a value could run as code.
		require.NotContains(t, s.Run, "${{", "step %q: an expression in run; pass it through env", s.Name)
		if s.ID == "install" {
			continue
		}
		dir := t.TempDir()
		script := filepath.Join(dir, "script.sh")
		require.NoError(t, os.WriteFile(script, []byte(s.Run), 0o600))
		output, summary := filepath.Join(dir, "output"), filepath.Join(dir, "summary")
		for _, f := range []string{output, summary} {
			require.NoError(t, os.WriteFile(f, nil, 0o600))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		// GitHub's command line for a composite step's shell: bash.
		cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		cmd.Dir = workspace
		cmd.Env = append(os.Environ(),
			"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"GITHUB_OUTPUT="+output, "GITHUB_STEP_SUMMARY="+summary,
			"GITHUB_PATH="+filepath.Join(dir, "path"), "GITHUB_WORKSPACE="+workspace,
			"NO_COLOR=1")
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+eval(v))
		}
		out, err := cmd.CombinedOutput()
		cancel()
		t.Logf("step %d %q:\n%s", i, s.Name, out)
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			if !failed {
				failed, res.code = true, exit.ExitCode()
			}
		default:
			require.NoError(t, err, "step %q", s.Name)
		}
		sum, err := os.ReadFile(summary)
		require.NoError(t, err)
		res.summary += string(sum)
		if s.ID != "" {
			res.outputs[s.ID] = readOutputs(t, output)
		}
	}
	return res
}

// readOutputs reads the key=value lines a step wrote to $GITHUB_OUTPUT.
func readOutputs(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		require.True(t, ok, "a $GITHUB_OUTPUT line that is not key=value: %q", sc.Text())
		out[k] = v
	}
	require.NoError(t, sc.Err())
	return out
}

// requireReport skips the test when the binary has no report command yet
// (it is built on another branch of the same issue).
func requireReport(t *testing.T, xdsconform string) {
	t.Helper()
	if err := exec.Command(xdsconform, "report", "--help").Run(); err != nil {
		t.Skip("xdsconform report not built yet")
	}
}

// TestGitHubAction runs the action's own commands the way the workflows in
// docs/ci.md use it: a passing server suite, one with a rule broken (the job
// must fail with the suite's exit code), and a client suite.
func TestGitHubAction(t *testing.T) {
	xdsconform := buildHarness(t)
	requireReport(t, xdsconform)
	version, err := exec.Command(xdsconform, "--version").Output()
	require.NoError(t, err)
	bin := filepath.Dir(xdsconform)
	for _, tc := range []struct {
		name   string
		inputs map[string]string
		code   int
	}{
		{"server passes", map[string]string{"target": "builtin:reference", "args": "--run server/nonce/*"}, exitOK},
		{"server breaks a rule", map[string]string{"target": "builtin:reference", "args": "--run server/nonce/* --fault answer-stale-nonce", "report-dir": "out/server"}, exitFailures},
		{"client passes", map[string]string{"role": "client", "target": "builtin:reference", "args": "--run client/nack/*", "fail-on": "must", "implementation": "impl.yaml"}, exitOK},
		{"bad role", map[string]string{"role": "both"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			workspace := t.TempDir()
			impl := "name: reference <client>\nversion: v0-test\ncontact: [xds-team@example.com]\n"
			require.NoError(t, os.WriteFile(filepath.Join(workspace, "impl.yaml"), []byte(impl), 0o600))
			res := runAction(t, bin, workspace, tc.inputs)
			assert.Equal(t, tc.code, res.code, "the action's exit code")
			assert.Equal(t, fmt.Sprint(tc.code), res.outputs["suite"]["exit-code"])
			dir := filepath.Join(workspace, "xdsconform-reports")
			if d := tc.inputs["report-dir"]; d != "" {
				dir = filepath.Join(workspace, d)
			}
			if tc.code == exitUsage {
				assert.Contains(t, res.summary, "xdsconform wrote no report")
				return
			}
			for _, f := range []string{"junit.xml", "report.json", "summary.md", "report.html"} {
				fi, err := os.Stat(filepath.Join(dir, f))
				if assert.NoError(t, err) {
					assert.NotZero(t, fi.Size(), f)
				}
			}
			md, err := os.ReadFile(filepath.Join(dir, "summary.md"))
			require.NoError(t, err)
			assert.Equal(t, string(md), res.summary, "the step summary is summary.md")
			run := readRun(t, filepath.Join(dir, "report.json"))
			assert.Equal(t, strings.TrimPrefix(strings.TrimSpace(string(version)), "xdsconform version "), run.HarnessVersion)
			if tc.code == exitFailures {
				assert.True(t, hasOutcome(run, results.Fail), "a failure in the report")
			}
			cert, err := os.ReadFile(filepath.Join(dir, "certification.yaml"))
			if tc.inputs["implementation"] == "" {
				assert.ErrorIs(t, err, os.ErrNotExist, "a certification report only for a named implementation")
			} else if assert.NoError(t, err) {
				assert.Contains(t, string(cert), "reference <client>")
				assert.Contains(t, string(cert), "v0-test")
			}
		})
	}
}

func hasOutcome(run results.Run, o results.Outcome) bool {
	for _, r := range run.Results {
		if r.Outcome == o {
			return true
		}
	}
	return false
}

// gitlabJob is the part of a GitLab CI job these tests run.
type gitlabJob struct {
	Variables map[string]string `yaml:"variables"`
	Script    []string          `yaml:"script"`
	Artifacts struct {
		Reports struct {
			JUnit string `yaml:"junit"`
		} `yaml:"reports"`
	} `yaml:"artifacts"`
}

// TestGitLabSnippet runs the script of the GitLab CI job in docs/ci.md
// (before_script, which installs xdsconform and starts the user's server,
// is what the test stands in for) against the reference server.
func TestGitLabSnippet(t *testing.T) {
	xdsconform := buildHarness(t)
	requireReport(t, xdsconform)
	doc, err := os.ReadFile("../../docs/ci.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(doc), "<!-- gitlab-ci:")
	require.True(t, ok, "docs/ci.md has no gitlab-ci marker")
	_, rest, ok = strings.Cut(rest, "```yaml\n")
	require.True(t, ok)
	block, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	var jobs map[string]gitlabJob
	require.NoError(t, yaml.Unmarshal([]byte(block), &jobs))
	require.Len(t, jobs, 1)
	for _, job := range jobs {
		workspace := t.TempDir()
		vars := map[string]string{}
		for k, v := range job.Variables {
			vars[k] = v
		}
		vars["XDS_TARGET"], vars["XDS_FIXTURE"] = "builtin:reference", ""
		// GitLab runs a job's script lines in one shell that stops at the
		// first failing one.
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", strings.Join(job.Script, "\n"))
		cmd.Dir = workspace
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(xdsconform)+string(os.PathListSeparator)+os.Getenv("PATH"), "CI_PROJECT_DIR="+workspace, "NO_COLOR=1")
		for k, v := range vars {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		reports := filepath.Join(workspace, vars["XDSCONFORM_REPORTS"])
		for _, f := range []string{"junit.xml", "report.json", "summary.md", "report.html"} {
			assert.FileExists(t, filepath.Join(reports, f))
		}
		assert.FileExists(t, filepath.Join(workspace, job.Artifacts.Reports.JUnit), "the JUnit artefact is the file the job writes")
	}
}

// TestActionMetadataShape checks action.yml against the metadata syntax of
// a composite action, which the run above does not exercise: GitHub
// refuses to load an action with an unknown key, and a composite action's
// output needs a value.
func TestActionMetadataShape(t *testing.T) {
	b, err := os.ReadFile("../../action.yml")
	require.NoError(t, err)
	var a map[string]any
	require.NoError(t, yaml.Unmarshal(b, &a))
	allowed := func(what string, m map[string]any, keys ...string) {
		for k := range m {
			assert.Contains(t, keys, k, "%s: key %q is not in the action metadata syntax", what, k)
		}
	}
	allowed("action.yml", a, "name", "author", "description", "inputs", "outputs", "runs", "branding")
	for name, in := range a["inputs"].(map[string]any) {
		allowed("input "+name, in.(map[string]any), "description", "required", "default", "deprecationMessage")
		assert.Contains(t, in, "description", "input %s", name)
	}
	for name, out := range a["outputs"].(map[string]any) {
		o := out.(map[string]any)
		allowed("output "+name, o, "description", "value")
		assert.Contains(t, o, "value", "output %s: a composite action's output needs a value", name)
	}
}
