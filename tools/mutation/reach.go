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
	"strings"
	"syscall"
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
	fs.StringVar(&f.dneTimer, "dne-timer", "2s", "as for run")
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

// reaches is what each suite run reaches, by suite name: a mutant faces
// only the runs that reach it (the Envoy profile's code is not the gRPC
// profile's).
type reaches map[string]*reached

// covers says whether any run reaches the position.
func (r reaches) covers(file string, line, col int) bool {
	for _, x := range r {
		if x.covers(file, line, col) {
			return true
		}
	}
	return r == nil
}

// loadReach reads the coverage of the unmutated suites for the current
// peer sources, measuring it first if no shard has yet.
func loadReach(ctx context.Context, f runFlags) (reaches, error) {
	key, err := sourcesKey(f.root)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(f.work, "reach-"+key)
	if _, err := os.Stat(base + ".done"); err != nil {
		if err := measureReach(ctx, f, base); err != nil {
			return nil, fmt.Errorf("measuring what the suites reach: %w", err)
		}
	}
	out := reaches{}
	for _, pkg := range []string{"refserver", "refclient"} {
		for _, args := range suites(f, pkg) {
			r, err := parseReach(base + "-" + suiteName(args) + ".txt")
			if err != nil {
				return nil, err
			}
			out[suiteName(args)] = r
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

// sourcesKey hashes the peers' sources: coverage measured for others is stale.
func sourcesKey(root string) (string, error) {
	h := sha256.New()
	for _, p := range Peers {
		files, err := filepath.Glob(filepath.Join(root, p.Dir, "*.go"))
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

func measureReach(ctx context.Context, f runFlags, base string) error {
	dir, err := os.MkdirTemp(f.work, "reach-")
	if err != nil {
		if err := os.MkdirAll(f.work, 0o755); err != nil {
			return err
		}
		if dir, err = os.MkdirTemp(f.work, "reach-"); err != nil {
			return err
		}
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "xdsconform")
	// The main package is among them: a binary whose main is not
	// instrumented writes no coverage at all.
	pkgs := []string{module + "cmd/xdsconform"}
	for _, p := range Peers {
		pkgs = append(pkgs, module+p.Dir)
	}
	build := exec.CommandContext(ctx, "go", "build", "-cover", "-coverpkg="+strings.Join(pkgs, ","), "-o", bin, "./cmd/xdsconform")
	build.Dir = f.root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -cover: %v: %s", err, firstLines(string(out), 3))
	}
	for _, pkg := range []string{"refserver", "refclient"} {
		for _, args := range suites(f, pkg) {
			cov := filepath.Join(dir, "cov-"+suiteName(args))
			if err := os.Mkdir(cov, 0o755); err != nil {
				return err
			}
			cmd := exec.CommandContext(ctx, bin, append(args, "--json", filepath.Join(dir, "r.json"))...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOCOVERDIR="+cov)
			if out, err := cmd.CombinedOutput(); err != nil {
				// The unmutated suites must pass: a mutant's failure
				// means nothing over a suite that fails anyway.
				return fmt.Errorf("unmutated %s suite: %v\n%s", suiteName(args), err, tail(string(out), 15))
			}
			path := base + "-" + suiteName(args) + ".txt"
			conv := exec.CommandContext(ctx, "go", "tool", "covdata", "textfmt", "-i="+cov, "-o="+path+".tmp")
			if out, err := conv.CombinedOutput(); err != nil {
				return fmt.Errorf("go tool covdata: %v: %s", err, out)
			}
			if err := os.Rename(path+".tmp", path); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(base+".done", nil, 0o644)
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
