package scenarios

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/xdsconform/xdsconform/internal/requirements"
)

func TestInvariantsBindTheirRole(t *testing.T) {
	seen := map[[2]string]bool{}
	for _, inv := range Invariants() {
		r, ok := requirements.Lookup(inv.Rule)
		switch {
		case !ok:
			t.Errorf("invariant %s (%s) is not in the catalogue", inv.Rule, inv.Role)
			continue
		case inv.Role != requirements.RoleServer && inv.Role != requirements.RoleClient:
			t.Errorf("invariant %s has role %q", inv.Rule, inv.Role)
		case r.Binds != inv.Role && r.Binds != "both":
			t.Errorf("invariant %s is checked in the %s role but binds %s", inv.Rule, inv.Role, r.Binds)
		case inv.Check == "":
			t.Errorf("invariant %s/%s says nothing about what it checks", inv.Role, inv.Rule)
		}
		if testable, reason, _ := requirements.Testability(inv.Rule, inv.Role); !testable {
			t.Errorf("invariant %s is checked in the %s role, where testability.tsv says it cannot be: %s", inv.Rule, inv.Role, reason)
		}
		key := [2]string{inv.Role, inv.Rule}
		if seen[key] {
			t.Errorf("invariant %s/%s listed twice", inv.Role, inv.Rule)
		}
		seen[key] = true
	}
}

// TestInvariantsMatchThePeers reads the fake peers' check functions and
// compares the rule IDs they report with Invariants(), so that the list
// cannot drift from what is actually checked.
func TestInvariantsMatchThePeers(t *testing.T) {
	for _, tt := range []struct {
		role, file, recv, fn string
	}{
		{requirements.RoleServer, "../fakeclient/invariants.go", "", "checkResponse"},
		{requirements.RoleClient, "../fakeserver/stream.go", "Stream", "check"},
	} {
		got := rulesIn(t, tt.file, tt.recv, tt.fn)
		var want []string
		for _, inv := range Invariants() {
			if inv.Role == tt.role {
				want = append(want, inv.Rule)
			}
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s %s reports rules %v; Invariants() lists %v for the %s role", tt.file, tt.fn, got, want, tt.role)
		}
	}
}

var ruleID = regexp.MustCompile(`^[A-Z]+-[0-9]+$`)

// rulesIn returns the sorted, distinct rule IDs written as string literals
// in function fn (a method of recv when recv is set) of file.
func rulesIn(t *testing.T, file, recv, fn string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	found := false
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != fn || (recv == "") != (fd.Recv == nil) {
			continue
		}
		if recv != "" {
			typ := fd.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); !ok || id.Name != recv {
				continue
			}
		}
		found = true
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && ruleID.MatchString(s) && !slices.Contains(rules, s) {
					rules = append(rules, s)
				}
			}
			return true
		})
	}
	if !found {
		t.Fatalf("%s has no function %s (receiver %q); update this test and Invariants()", file, fn, recv)
	}
	slices.Sort(rules)
	return rules
}
