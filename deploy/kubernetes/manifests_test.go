package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// flagKind is how a flag of xdsconform load takes its value.
type flagKind int

const (
	boolFlag     flagKind = iota // --tls: no value
	valueFlag                    // --clients N, once
	repeatedFlag                 // --metadata K=V, as often as wanted
)

func (k flagKind) String() string {
	return [...]string{boolFlag: "a switch", valueFlag: "a value", repeatedFlag: "a repeatable value"}[k]
}

// loadFlags are the flags xdsconform load accepts (cmd/xdsconform/load.go
// and the target flags it shares with server). TestLoadFlagsAreTheCommands
// checks them against the command's own usage, so that this list cannot
// drift from it unseen.
var loadFlags = map[string]flagKind{
	"target": valueFlag, "fixture": valueFlag, "fixture-plaintext": boolFlag, "connect-timeout": valueFlag,
	"tls": boolFlag, "tls-ca": valueFlag, "tls-cert": valueFlag, "tls-key": valueFlag, "tls-server-name": valueFlag,
	"node-cluster": valueFlag, "node-id": valueFlag, "node-metadata": repeatedFlag, "metadata": repeatedFlag, "redact-header": repeatedFlag, "max-recv-size": valueFlag,
	"fault": repeatedFlag, "container-env": repeatedFlag, "container-xds-port": valueFlag, "container-fixture-port": valueFlag,
	"clients": valueFlag, "nodes": valueFlag, "profile": valueFlag, "variant": valueFlag,
	"streams-per-conn": valueFlag, "churn": valueFlag, "churn-types": valueFlag, "churn-delay": valueFlag, "duration": valueFlag,
	"nack-burst": valueFlag, "burst-window": valueFlag, "transcripts": valueFlag,
	"sync-timeout": valueFlag, "settle": valueFlag, "start-wait": valueFlag, "memory-budget": valueFlag, "resource-padding": valueFlag,
	"shard": valueFlag, "run-id": valueFlag, "json": valueFlag, "markdown": valueFlag, "html": valueFlag, "slo": valueFlag,
}

// The harness's measured cost, which the resources must cover: 20 KiB a
// stream at 100 streams a connection (21 KiB measured at 4000 streams),
// 2 cores per 10k streams, and the process's own (42 MiB measured) with
// room.
const (
	bytesPerStream  = 20 << 10
	streamsPerCore  = 5000
	processBaseline = 64 << 20
)

// variable is a $(VAR) reference, which Kubernetes expands in args.
var variable = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// TestManifests checks the base and every overlay, the example and any a
// user adds beside it.
func TestManifests(t *testing.T) {
	overlays, err := filepath.Glob("overlays/*")
	if err != nil || !slices.Contains(overlays, filepath.Join("overlays", "example")) {
		t.Fatalf("overlays %v (%v): the example overlay is missing", overlays, err)
	}
	for _, dir := range append([]string{"base"}, overlays...) {
		t.Run(dir, func(t *testing.T) {
			if err := checkDir(dir); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLoadFlagsAreTheCommands builds xdsconform from the repository
// root and reads its load usage: loadFlags must name exactly its flags,
// each taking its value as the command does.
func TestLoadFlagsAreTheCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds xdsconform")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "xdsconform")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/xdsconform")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building xdsconform: %v\n%s", err, out)
	}
	usage, err := exec.CommandContext(ctx, bin, "load", "--help").Output()
	if err != nil {
		t.Fatalf("xdsconform load --help: %v", err)
	}
	// "      --name type   usage", "      --tls   usage" or "  -h, --help   usage".
	line := regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)(?: (\w+))?\s{2,}`)
	got := map[string]flagKind{}
	for _, m := range line.FindAllStringSubmatch(string(usage), -1) {
		switch {
		case m[1] == "help":
		case m[2] == "":
			got[m[1]] = boolFlag
		case m[2] == "stringArray" || m[2] == "strings":
			got[m[1]] = repeatedFlag
		default:
			got[m[1]] = valueFlag
		}
	}
	if len(got) == 0 {
		t.Fatalf("no flags read from xdsconform load --help:\n%s", usage)
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if k, ok := loadFlags[name]; !ok || k != got[name] {
			if !ok {
				t.Errorf("--%s (%v) is a flag of xdsconform load missing from loadFlags", name, got[name])
			} else {
				t.Errorf("--%s: xdsconform load takes %v, loadFlags says %v", name, got[name], k)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(loadFlags)) {
		if _, ok := got[name]; !ok {
			t.Errorf("--%s is in loadFlags but xdsconform load has no such flag", name)
		}
	}
}

// TestManifestsCheckFails proves each check can fail: a copy of the
// manifests with one defect must be rejected, for the reason given.
func TestManifestsCheckFails(t *testing.T) {
	cases := []struct {
		name, dir, file, old, new, want string
	}{
		{"misspelt field", "base", "base/job.yaml",
			"  parallelism: 4", "  paralelism: 4", `unknown field "spec.paralelism"`},
		{"field of the wrong type", "base", "base/job.yaml",
			"  completions: 4", `  completions: "4"`, "cannot unmarshal string"},
		{"flag load does not accept", "base", "base/job.yaml",
			"- --streams-per-conn\n", "- --streams-per-connection\n", `flag --streams-per-connection`},
		{"variable nothing defines", "base", "base/job.yaml",
			"$(CHURN)", "$(CHRUN)", "$(CHRUN)"},
		{"shard count in args differs", "base", "base/job.yaml",
			`value: "4"`, `value: "5"`, "--shard"},
		{"shard count not copied by the overlay", "overlays/example", "overlays/example/kustomization.yaml",
			"          - spec.parallelism\n", "", "parallelism"},
		{"not Indexed", "base", "base/job.yaml",
			"completionMode: Indexed", "completionMode: NonIndexed", "Indexed"},
		{"writable root", "base", "base/job.yaml",
			"readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem"},
		{"root allowed", "base", "base/job.yaml",
			"runAsNonRoot: true", "runAsNonRoot: false", "runAsNonRoot"},
		{"too little memory for the plan", "overlays/example", "overlays/example/kustomization.yaml",
			"CLIENTS=40000", "CLIENTS=80000", "memory request 256Mi / limit 256Mi: 10000 streams a shard need"},
		{"deadline shorter than the run", "overlays/example", "overlays/example/kustomization.yaml",
			"DURATION=120s", "DURATION=20m", "activeDeadlineSeconds"},
		{"report not on standard output", "base", "base/job.yaml",
			`- "-"`, "- /tmp/shard.json", "--json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range []string{"base", "overlays"} {
				if err := os.CopyFS(filepath.Join(root, d), os.DirFS(d)); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(root, c.file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(b), c.old); n != 1 {
				t.Fatalf("%s has %q %d times, want once: the defect would not be made", c.file, c.old, n)
			}
			if err := os.WriteFile(path, []byte(strings.Replace(string(b), c.old, c.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			err = checkDir(filepath.Join(root, c.dir))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error about %q", err, c.want)
			}
		})
	}
}

// strict decodes the kinds the manifests make into their API types by
// apiVersion and kind, failing on an unknown or duplicated field.
var strict = func() runtime.Decoder {
	s := runtime.NewScheme()
	if err := errors.Join(batchv1.AddToScheme(s), corev1.AddToScheme(s)); err != nil {
		panic(err) // the API packages' own registrations; cannot fail
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
}()

// checkDir builds a kustomization, decodes what it makes strictly and
// checks the Job.
func checkDir(dir string) error {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var jobs []*batchv1.Job
	configMaps := map[string]*corev1.ConfigMap{}
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return fmt.Errorf("%s: %w", r.CurId(), err)
		}
		obj, _, err := strict.Decode(y, nil, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", r.CurId(), err)
		}
		switch o := obj.(type) {
		case *batchv1.Job:
			jobs = append(jobs, o)
		case *corev1.ConfigMap:
			configMaps[o.Name] = o
		default:
			return fmt.Errorf("%s: a kind this test does not check; add it", r.CurId())
		}
	}
	if len(jobs) != 1 {
		return fmt.Errorf("%s makes %d Jobs, want 1", dir, len(jobs))
	}
	return checkJob(jobs[0], configMaps)
}

// checkJob checks what the manifests promise: an Indexed Job of N pods
// at once, each running shard $(JOB_COMPLETION_INDEX)/N of xdsconform load
// with flags it accepts and variables that are defined, its report on
// standard output, non-root on a read-only root, with the resources the
// plan's streams need.
func checkJob(j *batchv1.Job, configMaps map[string]*corev1.ConfigMap) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	s, pod := j.Spec, j.Spec.Template.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		fail("completionMode is not Indexed")
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions != *s.Parallelism || *s.Completions < 1 {
		fail("completions %v and parallelism %v must be the same shard count", deref(s.Completions), deref(s.Parallelism))
		return errors.Join(errs...)
	}
	shards := int(*s.Completions)
	if s.BackoffLimitPerIndex == nil {
		fail("backoffLimitPerIndex is not set")
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		fail("restartPolicy is %q, want Never", pod.RestartPolicy)
	}
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		fail("the pod does not set runAsNonRoot")
	}
	if len(pod.Containers) != 1 || pod.Containers[0].Name != "load" || len(pod.InitContainers) != 0 {
		fail("the pod must run one container, load")
		return errors.Join(errs...)
	}
	c := pod.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || (sc.Privileged != nil && *sc.Privileged) ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		fail("container load must have readOnlyRootFilesystem, no privilege (escalation) and drop ALL capabilities")
	}

	env, err := environment(c, configMaps)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	flags, err := parseLoadArgs(c.Args)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		v := flags[name]
		for _, m := range variable.FindAllStringSubmatch(v, -1) {
			if _, ok := env[m[1]]; !ok {
				fail("--%s %s: $(%s) is not defined in the container's environment (Kubernetes would pass it as is)", name, v, m[1])
			}
		}
	}
	for _, f := range []string{"target", "fixture", "clients", "duration", "shard", "run-id", "json"} {
		if _, ok := flags[f]; !ok {
			fail("--%s is missing", f)
		}
	}
	if flags["json"] != "-" {
		fail("--json %s: the report goes to standard output (--json -), where kubectl logs reads it", flags["json"])
	}
	if got, want := expand(flags["shard"], env, "JOB_COMPLETION_INDEX"), fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", shards); got != want {
		fail("--shard is %q, want %q (completions is %d)", got, want, shards)
	}
	for _, v := range [][2]string{
		{"JOB_COMPLETION_INDEX", "metadata.annotations['batch.kubernetes.io/job-completion-index']"},
		{"RUN_ID", "metadata.labels['batch.kubernetes.io/controller-uid']"},
	} {
		if got := fieldRef(c, v[0]); got != v[1] {
			fail("%s comes from %q, want the field %s", v[0], got, v[1])
		}
	}
	if flags["run-id"] != "$(RUN_ID)" {
		fail("--run-id is %q, want $(RUN_ID), the Job's UID", flags["run-id"])
	}

	clients, err := strconv.Atoi(expand(flags["clients"], env, ""))
	if err != nil || clients < shards {
		fail("--clients %s: want a number of at least the shard count %d", expand(flags["clients"], env, ""), shards)
		return errors.Join(errs...)
	}
	// One stream a client, as with the ADS variants.
	streams := int64((clients + shards - 1) / shards)
	req, lim := c.Resources.Requests, c.Resources.Limits
	if need := resource.NewMilliQuantity(streams*1000/streamsPerCore, resource.DecimalSI); req.Cpu().Cmp(*need) < 0 || lim.Cpu().Cmp(*req.Cpu()) < 0 {
		fail("cpu request %v / limit %v: %d streams a shard need %v", req.Cpu(), lim.Cpu(), streams, need)
	}
	if need := resource.NewQuantity(roundUpMiB(processBaseline+streams*bytesPerStream), resource.BinarySI); req.Memory().Cmp(*need) < 0 || lim.Memory().Cmp(*req.Memory()) < 0 {
		fail("memory request %v / limit %v: %d streams a shard need %v", req.Memory(), lim.Memory(), streams, need)
	}
	var run time.Duration // the churn, and shard 0's wait before it
	for _, f := range []string{"duration", "churn-delay"} {
		if v, ok := flags[f]; ok {
			d, err := time.ParseDuration(expand(v, env, ""))
			if err != nil {
				fail("--%s %s: %v", f, v, err)
			}
			run += d
		}
	}
	if s.ActiveDeadlineSeconds == nil || time.Duration(*s.ActiveDeadlineSeconds)*time.Second < run+5*time.Minute {
		fail("activeDeadlineSeconds %v must leave the %v run five minutes to connect, sync and finish", deref(s.ActiveDeadlineSeconds), run)
	}
	return errors.Join(errs...)
}

// environment is the container's variables as Kubernetes would define
// them for $(VAR) in args: values given or taken from the ConfigMaps built
// beside the Job; a field or resource reference is known only in the pod
// ("").
func environment(c corev1.Container, configMaps map[string]*corev1.ConfigMap) (map[string]string, error) {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			return nil, fmt.Errorf("envFrom other than a ConfigMap")
		}
		cm, ok := configMaps[from.ConfigMapRef.Name]
		if !ok {
			return nil, fmt.Errorf("envFrom ConfigMap %s is not in the build", from.ConfigMapRef.Name)
		}
		for k, v := range cm.Data {
			env[from.Prefix+k] = v
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil || e.ValueFrom.ResourceFieldRef != nil:
			env[e.Name] = ""
		default:
			return nil, fmt.Errorf("env %s: only values, field and resource references are understood here", e.Name)
		}
	}
	return env, nil
}

// parseLoadArgs checks args are "load" and then flags of xdsconform load,
// each valued one with its value, and returns them by name.
func parseLoadArgs(args []string) (map[string]string, error) {
	if len(args) == 0 || args[0] != "load" {
		return nil, fmt.Errorf("args %q do not start with the load command", args)
	}
	flags := map[string]string{}
	for i := 1; i < len(args); i++ {
		name, value, inline := strings.Cut(strings.TrimPrefix(args[i], "--"), "=")
		kind, known := loadFlags[name]
		switch {
		case !strings.HasPrefix(args[i], "--"):
			return nil, fmt.Errorf("arg %q is not a flag", args[i])
		case !known:
			return nil, fmt.Errorf("flag --%s: xdsconform load has no such flag", name)
		case kind == boolFlag && inline:
			return nil, fmt.Errorf("flag --%s takes no value", name)
		case kind != boolFlag && !inline:
			if i+1 == len(args) || strings.HasPrefix(args[i+1], "--") {
				return nil, fmt.Errorf("flag --%s has no value", name)
			}
			i++
			value = args[i]
		}
		if _, dup := flags[name]; dup && kind != repeatedFlag {
			return nil, fmt.Errorf("flag --%s is given twice", name)
		}
		flags[name] = value // a repeated flag's last value: enough for the $(VAR) check
	}
	return flags, nil
}

// expand replaces $(VAR) by its value in env, except keep's.
func expand(s string, env map[string]string, keep string) string {
	return variable.ReplaceAllStringFunc(s, func(m string) string {
		if name := m[2 : len(m)-1]; name != keep {
			if v, ok := env[name]; ok {
				return v
			}
		}
		return m
	})
}

// fieldRef is the field path variable name is taken from, or "".
func fieldRef(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			return e.ValueFrom.FieldRef.FieldPath
		}
	}
	return ""
}

// roundUpMiB rounds n bytes up to whole MiB, for messages people read.
func roundUpMiB(n int64) int64 { return (n + 1<<20 - 1) &^ (1<<20 - 1) }

// deref is what p points to, or nil, for messages.
func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
