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
//
// from is the harness's own reading of when it happened (a request's
// arrival, say), which stalls of the harness make late: the client's clock
// started earlier by up to what they took from the hops between (Lost, of
// the stalls before from). So the time counted is what passed since from
// plus that, and a resource seen gone when it reaches by is a doubt too.
func (c *C) goneBefore(from time.Time, by time.Duration, since string, also func(observer.Resource) bool) func(observer.Resource) bool {
	return func(r observer.Resource) bool {
		if !isMissing(r) {
			return also != nil && also(r)
		}
		now := time.Now()
		took, st := now.Sub(from), c.LagIn(from.Add(-by), from)
		if took+st.Lost() >= by {
			c.Logf("the harness read the status view %s after %s, which it may have seen up to %s late, when the client could rightly have given the resource up: no verdict", wording.Duration(took), since, wording.Duration(st.Lost()))
			c.DoubtNow(c.Headline(), "the harness's read of the status view after "+since, took, by, st)
		}
		return true
	}
}
