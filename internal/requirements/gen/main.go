// Command gen regenerates internal/requirements/catalog.tsv from the requirements
// catalogue document (the repository's copy, internal/requirements/requirements.md).
// It is run by go generate in package requirements (make generate):
//
//	go run ./gen requirements.md catalog.tsv
//
// The output is checked in so that the harness binary embeds the catalogue.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/xdsconform/xdsconform/internal/requirements/internal/specmd"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gen <requirements.md> <catalog.tsv>")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	entries, err := specmd.Parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	var buf bytes.Buffer
	if err := specmd.WriteTSV(&buf, entries); err != nil {
		return err
	}
	// Write beside the target and rename, so an interrupted run never leaves
	// a truncated catalogue behind for go:embed to pick up.
	tmp, err := os.CreateTemp(filepath.Dir(out), ".catalog-*.tsv")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return err
	}
	fmt.Printf("gen: wrote %d requirements to %s\n", len(entries), out)
	return nil
}
