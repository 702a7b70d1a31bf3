package wire

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOneReceiveLimit walks the module's sources: the receive limit's
// default is a constant declared once, here; anything else that names it
// (targets.DefaultMaxRecvSize) must be this constant, not a figure of its
// own, so the client and server roles cannot come to differ.
func TestOneReceiveLimit(t *testing.T) {
	named := regexp.MustCompile(`(?i)max_?recv_?size`)
	var homes []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if base := d.Name(); path != ".." && (strings.HasPrefix(base, ".") || base == "testdata" || base == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil // a file being edited, or of another build: not ours to judge
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !named.MatchString(name.Name) || i >= len(vs.Values) {
						continue
					}
					// A constant defined as another package's is an alias,
					// not a home of its own.
					if sel, ok := vs.Values[i].(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "wire" && sel.Sel.Name == "DefaultMaxRecvSize" {
							continue
						}
					}
					homes = append(homes, filepath.ToSlash(path)+": "+name.Name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking the module: %v", err)
	}
	if len(homes) != 1 || homes[0] != "../wire/recvlimit.go: DefaultMaxRecvSize" {
		t.Fatalf("the receive limit's default must be declared once, in wire/recvlimit.go; found %q", homes)
	}
	if MaxRecvSize(0) != DefaultMaxRecvSize || MaxRecvSize(-1) != DefaultMaxRecvSize || MaxRecvSize(7) != 7 {
		t.Fatalf("MaxRecvSize: 0 or less is the default, anything else itself")
	}
}
