package requirements

import (
	"reflect"
	"strings"
	"testing"
)

// impliedRoles is the roles a rule's Binds gives it rows in.
func impliedRoles(binds string) []string {
	switch binds {
	case "server", "proxy":
		return []string{RoleServer}
	case "client":
		return []string{RoleClient}
	case "both":
		return []string{RoleServer, RoleClient}
	}
	return nil
}

// blackBoxTestable is the default testability: the catalogue's Black-box
// field says Yes (with or without a qualifier) or Partial.
func blackBoxTestable(bb string) bool {
	return strings.HasPrefix(bb, "Yes") || strings.HasPrefix(bb, "Partial")
}

func TestTestabilityRowsMatchCatalogue(t *testing.T) {
	// Rows come in catalogue order, server before client, and only for
	// catalogue rules.
	var want [][2]string
	for _, r := range All() {
		if len(impliedRoles(r.Binds)) == 0 {
			t.Errorf("%s binds %q", r.ID, r.Binds)
		}
		for _, role := range impliedRoles(r.Binds) {
			want = append(want, [2]string{r.ID, role})
		}
	}
	var got [][2]string
	for _, row := range testability {
		if _, ok := Lookup(row.id); !ok {
			t.Errorf("testability.tsv names unknown rule %q", row.id)
		}
		got = append(got, [2]string{row.id, row.role})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("testability.tsv rows (id, role) differ from what the catalogue's Binds imply:\n got %v\nwant %v", got, want)
	}

	for _, row := range testability {
		r, _ := Lookup(row.id)
		switch {
		case !row.testable && row.reason == "":
			t.Errorf("%s/%s: testable=no without a reason", row.id, row.role)
		case row.testable && !blackBoxTestable(r.BlackBox) && row.reason == "":
			t.Errorf("%s/%s: testable=yes but the catalogue says Black-box %q, and the row's reason does not say why", row.id, row.role, r.BlackBox)
		case r.Binds == "proxy" && row.testable:
			t.Errorf("%s binds proxies, which the harness does not play against", row.id)
		}
		if strings.ContainsAny(row.reason, "\t\r\n") {
			t.Errorf("%s/%s: reason has a tab or newline", row.id, row.role)
		}
	}
}

func TestTestability(t *testing.T) {
	tests := []struct {
		id, role   string
		testable   bool
		reasonPart string
		ok         bool
	}{
		{"NONCE-7", RoleServer, true, "", true},
		{"NONCE-7", RoleClient, false, "", false},
		{"STREAM-1", RoleClient, true, "", true},
		{"VER-6", RoleServer, false, "delta requests carry no version field", true},
		{"VER-6", RoleClient, true, "", true},
		{"ACK-5", RoleServer, true, "", true}, // Partial counts as testable
		{"DYN-9", RoleServer, false, "binds caching proxies", true},
		{"DYN-9", RoleClient, false, "", false},
		{"DYN-12", RoleServer, false, "Not observable on the xDS wire", true},
		{"VALID-1", RoleClient, false, "Informative", true},
		{"NONCE-99", RoleServer, false, "", false},
		{"nonce-7", RoleServer, false, "", false},
	}
	for _, tt := range tests {
		testable, reason, ok := Testability(tt.id, tt.role)
		if testable != tt.testable || ok != tt.ok || !strings.Contains(reason, tt.reasonPart) || (tt.reasonPart == "" && reason != "") {
			t.Errorf("Testability(%q, %q) = %v, %q, %v; want %v, reason containing %q, %v",
				tt.id, tt.role, testable, reason, ok, tt.testable, tt.reasonPart, tt.ok)
		}
	}
}

func TestTestabilityRoles(t *testing.T) {
	for id, want := range map[string][]string{
		"NONCE-7":  {RoleServer},
		"STREAM-1": {RoleClient},
		"VER-6":    {RoleServer, RoleClient},
		"CACHE-1":  {RoleServer},
		"NONCE-99": nil,
	} {
		if got := Roles(id); !reflect.DeepEqual(got, want) {
			t.Errorf("Roles(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestTestabilityLoadRejectsMalformed(t *testing.T) {
	h := testabilityHeader + "\n"
	for name, tsv := range map[string]string{
		"no header":    "# only a comment\n",
		"bad header":   "id\trole\n",
		"short line":   h + "A-1\tserver\tyes\n",
		"bad role":     h + "A-1\tproxy\tno\tx\n",
		"bad testable": h + "A-1\tserver\tmaybe\t\n",
		"duplicate":    h + "A-1\tserver\tyes\t\nA-1\tserver\tno\tx\n",
	} {
		if _, err := loadTestability(tsv); err == nil {
			t.Errorf("%s: loadTestability accepted %q", name, tsv)
		}
	}
	rows, err := loadTestability("# c\n" + h + "A-1\tserver\tyes\t\nA-1\tclient\tno\twhy\n")
	if err != nil || len(rows) != 2 || rows[1] != (testabilityRow{"A-1", RoleClient, false, "why"}) {
		t.Errorf("loadTestability = %+v, %v", rows, err)
	}
}
