package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sync/errgroup"
)

const module = "github.com/xdsconform/xdsconform/"

// reached is which code of the reference peers the unmutated suites run:
// a mutant elsewhere cannot change what they see, so it survives without
// a run (and is listed as never reached, which is a gap of its own).
type reached struct {
	blocks map[string][]block // by file, relative to the root
	// zero are the blocks no run reached. A position in none of either
	// (a declaration's expression, say) is taken as reached: only a
	// mutant known to be in code never run is not run.
	zero map[string][]block
}

type block struct{ l0, c0, l1, c1 int }

func (r *reached) covers(file string, line, col int) bool {
	if r == nil {
		return true
	}
	for _, b := range r.blocks[file] {
		if b.has(line, col) {
			return true
		}
	}
	for _, b := range r.zero[file] {
		if b.has(line, col) {
			return false
		}
	}
	return true
}

func (b block) has(line, col int) bool {
	return (line > b.l0 || line == b.l0 && col >= b.c0) && (line < b.l1 || line == b.l1 && col <= b.c1)
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func cmdReach(args []string) error {
	var f runFlags
	fs := flag.NewFlagSet("reach", flag.ContinueOnError)
	f.register(fs)
	fs.StringVar(&f.dneTimer, "dne-timer", "3s", "as for run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if f.root, err = filepath.Abs(f.root); err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	_, err = loadReach(ctx, f)
	return err
}

// reaches is what each suite run reaches, by suite name, and within it by
// scenario: a mutant faces only the runs that reach it (the Envoy
// profile's code is not the gRPC profile's), and in each run only the
// scenarios that reach it. A scenario that never executes the mutated
// code sees the unmutated peer, so leaving it out changes no verdict and
// saves part of a run: a reference server mutant is reached by 67 of the
// 161 server scenarios at the median (the second run).
type reaches map[string]*suiteReach

// suiteReach is one suite run's coverage, scenario by scenario, each
// measured in a run of that scenario alone (all its variants).
type suiteReach struct {
	ids []string // in catalogue order
	by  map[string]*reached
}

// covers says whether any run reaches the position.
func (r reaches) covers(file string, line, col int) bool {
	for _, x := range r {
		if len(x.scenarios(file, line, col)) > 0 {
			return true
		}
	}
	return r == nil
}

// scenarios are the scenarios of the run that reach the position.
func (s *suiteReach) scenarios(file string, line, col int) []string {
	var ids []string
	for _, id := range s.ids {
		if s.by[id].covers(file, line, col) {
			ids = append(ids, id)
		}
	}
	return ids
}

// loadReach reads the coverage of the unmutated suites for the current
// peer sources, measuring it first if no shard has yet.
func loadReach(ctx context.Context, f runFlags) (reaches, error) {
	key, err := sourcesKey(f.root)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(f.work, "reach-"+key)
	if err := os.MkdirAll(f.work, 0o755); err != nil {
		return nil, err
	}
	// Shards started side by side measure once: the first holds the
	// lock while it does, the others wait for it and read its files.
	lock, err := os.OpenFile(base+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(base + ".done"); err != nil {
		if err := measureReach(ctx, f, base); err != nil {
			return nil, fmt.Errorf("measuring what the suites reach: %w", err)
		}
	}
	out := reaches{}
	for _, pkg := range []string{"refserver", "refclient"} {
		for _, args := range suites(f, pkg) {
			dir := base + "-" + suiteName(args)
			idx, err := os.ReadFile(filepath.Join(dir, "index"))
			if err != nil {
				return nil, err
			}
			s := &suiteReach{by: map[string]*reached{}}
			for _, line := range strings.Split(strings.TrimSpace(string(idx)), "\n") {
				n, id, ok := strings.Cut(line, " ")
				if !ok {
					continue
				}
				r, err := parseReach(filepath.Join(dir, n+".txt"))
				if err != nil {
					return nil, err
				}
				s.ids = append(s.ids, id)
				s.by[id] = r
			}
			out[suiteName(args)] = s
		}
	}
	return out, nil
}

// suiteName names a suite run: server, client, client-envoy.
func suiteName(args []string) string {
	if len(args) > 0 && args[len(args)-1] == "envoy" {
		return args[0] + "-envoy"
	}
	return args[0]
}

// sourcesKey hashes the peers' sources: coverage measured for others is
// stale. The catalogue is in it too: a scenario added or changed reaches
// other code.
func sourcesKey(root string) (string, error) {
	h := sha256.New()
	for _, dir := range append(peerDirs(), "scenarios") {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			return "", err
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s %d\n", file, len(b))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

func peerDirs() []string {
	var dirs []string
	for _, p := range Peers {
		dirs = append(dirs, p.Dir)
	}
	return dirs
}

// measureReach runs every scenario of every suite alone, in a binary
// built with coverage, and keeps what each reached: base-SUITE/index
// lists "N ID" a line, base-SUITE/N.txt is that scenario's coverage.
// Scenarios run f.jobs at a time, each its own process.
func measureReach(ctx context.Context, f runFlags, base string) error {
	if err := os.MkdirAll(f.work, 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(f.work, "reach-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "xdsconform")
	// The main package is among them: a binary whose main is not
	// instrumented writes no coverage at all.
	pkgs := []string{module + "cmd/xdsconform"}
	for _, p := range peerDirs() {
		pkgs = append(pkgs, module+p)
	}
	build := exec.CommandContext(ctx, "go", "build", "-cover", "-coverpkg="+strings.Join(pkgs, ","), "-o", bin, "./cmd/xdsconform")
	build.Dir = f.root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -cover: %v: %s", err, firstLines(string(out), 3))
	}
	for _, pkg := range []string{"refserver", "refclient"} {
		for _, args := range suites(f, pkg) {
			name := suiteName(args)
			ids, err := scenariosRun(ctx, bin, dir, args, name)
			if err != nil {
				return err
			}
			out := base + "-" + name
			if err := os.RemoveAll(out); err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "reach: %s suite, %d scenarios one at a time\n", name, len(ids))
			if err := forEach(ctx, f.jobs, len(ids), func(i int) error {
				return measureOne(ctx, bin, dir, args, name, ids[i], filepath.Join(out, strconv.Itoa(i)+".txt"))
			}); err != nil {
				return err
			}
			var idx strings.Builder
			for i, id := range ids {
				fmt.Fprintf(&idx, "%d %s\n", i, id)
			}
			if err := os.WriteFile(filepath.Join(out, "index"), []byte(idx.String()), 0o644); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(base+".done", nil, 0o644)
}

// measureOne runs one scenario of one suite and writes its coverage.
func measureOne(ctx context.Context, bin, dir string, args []string, suite, id, path string) error {
	cov, err := os.MkdirTemp(dir, "cov-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cov)
	cmd := exec.CommandContext(ctx, bin, append(args, "--run", id, "--json", filepath.Join(cov, "r.json"))...)
	cmd.Dir = cov
	cmd.Env = append(os.Environ(), "GOCOVERDIR="+cov)
	if out, err := cmd.CombinedOutput(); err != nil {
		// The unmutated suites must pass: a mutant's failure means
		// nothing over a scenario that fails anyway.
		return fmt.Errorf("unmutated %s suite, %s: %v\n%s", suite, id, err, tail(string(out), 15))
	}
	conv := exec.CommandContext(ctx, "go", "tool", "covdata", "textfmt", "-i="+cov, "-o="+path+".tmp")
	if out, err := conv.CombinedOutput(); err != nil {
		return fmt.Errorf("go tool covdata: %v: %s", err, out)
	}
	return os.Rename(path+".tmp", path)
}

// scenariosRun runs a suite whole, unmutated, and names the scenarios
// that ran in it (a pair that was not skipped), in its order: the Envoy
// profile runs scenarios the gRPC profile skips, and the other way round.
// The whole suite must pass: a mutant's failure means nothing over a
// suite that fails anyway.
func scenariosRun(ctx context.Context, bin, dir string, args []string, suite string) ([]string, error) {
	report := filepath.Join(dir, suite+".json")
	cmd := exec.CommandContext(ctx, bin, append(args, "--json", report)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("unmutated %s suite: %v\n%s", suite, err, tail(string(out), 15))
	}
	rep, err := readReport(report)
	if err != nil {
		return nil, err
	}
	var ids []string
	seen := map[string]bool{}
	for _, p := range rep.Results {
		if p.Outcome != "skipped" && !seen[p.ID] {
			seen[p.ID] = true
			ids = append(ids, p.ID)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("unmutated %s suite: no scenario ran", suite)
	}
	return ids, nil
}

// forEach calls fn(0..n-1), jobs at a time, and returns the first error
// (the others still finish: each is a process of its own, bounded by ctx).
func forEach(ctx context.Context, jobs, n int, fn func(int) error) error {
	if jobs < 1 {
		jobs = 1
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(jobs)
	for i := 0; i < n; i++ {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(i) })
	}
	return g.Wait()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// parseReach reads a coverage profile (mode line, then
// "pkg/file.go:L0.C0,L1.C1 statements count") into the blocks run.
func parseReach(path string) (*reached, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	r := &reached{blocks: map[string][]block{}, zero: map[string][]block{}}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			continue
		}
		file, pos, ok := strings.Cut(fields[0], ":")
		if !ok {
			continue
		}
		var b block
		if _, err := fmt.Sscanf(pos, "%d.%d,%d.%d", &b.l0, &b.c0, &b.l1, &b.c1); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, line, err)
		}
		rel := strings.TrimPrefix(file, module)
		if fields[2] == "0" {
			r.zero[rel] = append(r.zero[rel], b)
		} else {
			r.blocks[rel] = append(r.blocks[rel], b)
		}
	}
	return r, sc.Err()
}
