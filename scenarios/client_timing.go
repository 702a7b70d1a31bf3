package scenarios

import (
	"time"

	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/observer"
)

// goneBefore is the predicate of a must-not-happen watch (C.NeverWithin)
// on a resource the client must not give up before the time by, counted
// from from (since says what happened then, for the report): it is gone
// (DOES_NOT_EXIST or unlisted), or also holds of it. Seen gone only once by
// had passed, because the harness itself read the view late, it is no
// verdict: the client may have let it go in its own time. The pair is
// then in doubt (engine.T.DoubtNow), and runs again by itself.
func (c *C) goneBefore(from time.Time, by time.Duration, since string, also func(observer.Resource) bool) func(observer.Resource) bool {
	return func(r observer.Resource) bool {
		if !isMissing(r) {
			return also != nil && also(r)
		}
		if took := time.Since(from); took >= by {
			c.Logf("the harness read the status view only %s after %s, when the client could rightly have given the resource up: no verdict", wording.Duration(took), since)
			c.DoubtNow(c.Headline(), "the harness's read of the status view after "+since, took, by, c.LagIn(from, time.Now()))
		}
		return true
	}
}
