package scenarios

import (
	"strings"
	"testing"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
)

func TestTmpXdstpCatches(t *testing.T) {
	mine := map[string][]serverCatch{}
	for id, c := range mustCatch {
		if strings.HasPrefix(id, "server/xdstp/") || strings.HasPrefix(id, "server/collections/") || strings.HasPrefix(id, "server/redirect/") {
			mine[id] = c
		}
	}
	proveCatches(t, mine, func(id string, c serverCatch) ([]results.Result, error) {
		return runWithFault(c.fault, engine.DefaultTimeouts, engine.Selection{Run: []string{id}, Variants: c.variants})
	})
}
