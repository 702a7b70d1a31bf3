// Command compat turns the e2e suite's reports (e2e/out/PEER/FAMILY.json,
// and the heavy peers' committed e2e/heavy-results) into
// COMPATIBILITY.md; see package reports/matrix. Reports written by the CLI
// with --impl-name (or --implementation) are accepted too, in a
// directory DIR/NAME/*.json or named directly.
//
//	go run ./e2e/compat -in e2e/out,e2e/heavy-results -out COMPATIBILITY.md
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/xdsconform/xdsconform/reports/matrix"
)

func main() {
	in := flag.String("in", "e2e/out,e2e/heavy-results", "directories of the e2e reports (or JSON reports), comma-separated; earlier ones win per peer")
	out := flag.String("out", "COMPATIBILITY.md", "file to write")
	flag.Parse()
	runs, err := matrix.Load(*in)
	if err == nil && len(runs) == 0 {
		err = fmt.Errorf("no reports in %s: run make e2e first", *in)
	}
	if err == nil {
		err = os.WriteFile(*out, []byte(matrix.Render(runs)), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		os.Exit(2)
	}
}
