// Command mutation measures the suites the way strong test suites measure
// themselves: it plants small mistakes (mutants) in the protocol code of
// the reference peers, peers/refserver and peers/refclient, runs the
// suite whose oracle each peer is against each mutant, and says which
// mutants a failing pair caught, and under which rule (docs/mutation.md).
//
//	go run ./tools/mutation list                  every mutant, a line each
//	go run ./tools/mutation run -shard 1/2        run one shard's mutants
//	go run ./tools/mutation reach                 measure what the unmutated suites run
//	go run ./tools/mutation report                write docs/mutation.md
//
// make mutation runs the shards side by side and then the report. It is
// not part of make test or .ci/run: it takes hours.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mutation list|run|report [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "list":
		err = cmdList(os.Args[2:])
	case "run":
		err = cmdRun(os.Args[2:])
	case "reach":
		err = cmdReach(os.Args[2:])
	case "report":
		err = cmdReport(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want list, run or report", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutation:", err)
		os.Exit(2)
	}
}
