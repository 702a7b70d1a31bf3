// Command godirective finds the oldest Go the module's own code needs, to
// set the go directive (docs/embedding-footprint.md). It is a go vet tool
// that runs the stdversion analyzer with the module's Go version replaced
// by $GODIRECTIVE_GO (go1.24, say): the analyzer then reports every
// standard-library symbol newer than that, and the type checker every
// language feature. tools/godirective.sh runs it at each version.
//
// The go command keys its cache of vet results on the tool's -V=full
// line, so that line names the version checked.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/stdversion"
	"golang.org/x/tools/go/analysis/unitchecker"
)

// module is the module whose packages are checked at the lowered version;
// its dependencies keep their own.
const module = "github.com/xdsconform/xdsconform"

func main() {
	version := os.Getenv("GODIRECTIVE_GO")
	args := os.Args[1:]
	switch {
	case len(args) == 1 && args[0] == "-V=full":
		fmt.Printf("godirective version devel buildID=godirective-%s\n", version)
	case len(args) > 0 && strings.HasSuffix(args[len(args)-1], ".cfg"):
		if !strings.HasPrefix(version, "go1.") {
			fmt.Fprintln(os.Stderr, "godirective: set GODIRECTIVE_GO to the version to check, such as go1.24")
			os.Exit(2)
		}
		cfg, err := lowered(args[len(args)-1], version)
		if err != nil {
			fmt.Fprintf(os.Stderr, "godirective: %v\n", err)
			os.Exit(2)
		}
		unitchecker.Run(cfg, []*analysis.Analyzer{stdversion.Analyzer})
	default:
		unitchecker.Main(stdversion.Analyzer)
	}
}

// lowered writes a copy of the vet configuration in path with the Go
// version of the module's packages set to version, and returns its path.
func lowered(path, version string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read vet configuration: %w", err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "", fmt.Errorf("vet configuration %s: %w", path, err)
	}
	if mod, _ := cfg["ModulePath"].(string); mod == module {
		cfg["GoVersion"] = version
	}
	out, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("vet configuration: %w", err)
	}
	low := path + ".lowered.cfg"
	if err := os.WriteFile(low, out, 0o600); err != nil {
		return "", fmt.Errorf("write vet configuration: %w", err)
	}
	return low, nil
}
