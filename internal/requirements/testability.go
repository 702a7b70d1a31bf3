package requirements

import (
	_ "embed"
	"fmt"
	"strings"
)

// The roles the harness plays, as named in testability.tsv, the CLI and
// scenario IDs.
const (
	// RoleServer is the server suite: the harness plays an xDS client
	// against a management server, and checks rules that bind servers.
	RoleServer = "server"
	// RoleClient is the client suite: the harness plays the management
	// server against an xDS client, and checks rules that bind clients.
	RoleClient = "client"
)

// testabilityTSV says, per rule and role, whether the harness can check the
// rule. It is hand-maintained and checked against catalog.tsv by the tests:
// one row per role the rule's Binds implies ("both" gives a server and a
// client row; "proxy" gives one untestable server row), testable "yes" when
// the rule's Black-box field starts with Yes or Partial and "no" with a
// reason otherwise, unless the row's reason says why it departs from that.
//
//go:embed testability.tsv
var testabilityTSV string

// testabilityHeader is the column line of testability.tsv.
const testabilityHeader = "id\trole\ttestable\treason"

// testabilityRow is one line of testability.tsv.
type testabilityRow struct {
	id, role string
	testable bool
	reason   string
}

var (
	testability = mustLoadTestability(testabilityTSV)
	byRole      = indexTestability(testability)
)

func mustLoadTestability(tsv string) []testabilityRow {
	rows, err := loadTestability(tsv)
	if err != nil {
		panic("requirements: embedded testability.tsv: " + err.Error())
	}
	return rows
}

// loadTestability parses testability.tsv: "#" comment lines, the header,
// then one row per (rule, role). It checks the format only; the tests check
// the rows against the catalogue.
func loadTestability(tsv string) ([]testabilityRow, error) {
	var rows []testabilityRow
	header := false
	seen := map[[2]string]bool{}
	for i, l := range strings.Split(strings.TrimSuffix(tsv, "\n"), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		if !header {
			if l != testabilityHeader {
				return nil, fmt.Errorf("line %d: header is not %q", i+1, testabilityHeader)
			}
			header = true
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: %d fields, want 4", i+1, len(f))
		}
		if f[1] != RoleServer && f[1] != RoleClient {
			return nil, fmt.Errorf("line %d: role %q is not %s or %s", i+1, f[1], RoleServer, RoleClient)
		}
		if f[2] != "yes" && f[2] != "no" {
			return nil, fmt.Errorf("line %d: testable %q is not yes or no", i+1, f[2])
		}
		key := [2]string{f[0], f[1]}
		if seen[key] {
			return nil, fmt.Errorf("line %d: second %s row for %s", i+1, f[1], f[0])
		}
		seen[key] = true
		rows = append(rows, testabilityRow{id: f[0], role: f[1], testable: f[2] == "yes", reason: f[3]})
	}
	if !header {
		return nil, fmt.Errorf("no header line %q", testabilityHeader)
	}
	return rows, nil
}

func indexTestability(rows []testabilityRow) map[string][]testabilityRow {
	m := map[string][]testabilityRow{}
	for _, r := range rows {
		m[r.id] = append(m[r.id], r)
	}
	return m
}

// Testability says whether the harness can check rule id in role
// (RoleServer or RoleClient). reason says why not when testable is false,
// and is usually empty when it is true. ok is false when the rule has no
// row in that role: an unknown ID, or a rule that binds only the other
// side.
func Testability(id, role string) (testable bool, reason string, ok bool) {
	for _, r := range byRole[id] {
		if r.role == role {
			return r.testable, r.reason, true
		}
	}
	return false, "", false
}

// Roles returns the roles in which rule id is assessed, server before
// client: the roles its Binds implies ("both" gives both, "proxy" gives
// RoleServer, where it is untestable). Whether the rule can be checked in
// each is Testability's answer. Roles returns nil for an unknown ID; the
// slice is the caller's.
func Roles(id string) []string {
	var roles []string
	for _, role := range []string{RoleServer, RoleClient} {
		if _, _, ok := Testability(id, role); ok {
			roles = append(roles, role)
		}
	}
	return roles
}
