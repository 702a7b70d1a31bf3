package htmlpage

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/results"
)

// Writing a page from JSON reports by hand, to look at it:
//
//	go test ./reports/htmlpage -run TestWriteFromReports -args -reports=a.json,b.json -page=out.html
var (
	reportsFlag = flag.String("reports", "", "comma-separated JSON reports to render (TestWriteFromReports, TestScreenshot)")
	pageFlag    = flag.String("page", "", "where TestWriteFromReports writes the page")
)

// readReports reads JSON reports as the report command does.
func readReports(t *testing.T, paths string) []results.Run {
	t.Helper()
	var runs []results.Run
	for _, p := range strings.Split(paths, ",") {
		run, _, err := reports.ReadJSONFile(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	return runs
}

func TestWriteFromReports(t *testing.T) {
	if *reportsFlag == "" || *pageFlag == "" {
		t.Skip("a helper: give -reports and -page to write a page from JSON reports")
	}
	f, err := os.Create(*pageFlag)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Write(f, readReports(t, *reportsFlag)); err != nil {
		t.Fatal(err)
	}
}
