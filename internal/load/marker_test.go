package load

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/wire"
)

// Every type a run builds carries its marker where a client finds it in
// the resource's bytes.
func TestMarkerSurvivesEveryType(t *testing.T) {
	o := okOptions()
	o.Profile = "LDS=l;RDS=r;CDS=c;EDS=c;RTDS=rt"
	p, err := newPlan(o)
	require.NoError(t, err)
	for i, r := range p.resources {
		want := marker{res: i, change: 42, origin: 1700000000123456789, bad: i%2 == 1}
		a, err := p.build(i, want)
		require.NoError(t, err, r.String())
		assert.Equal(t, r.t.URL, a.GetTypeUrl())
		got, ok := findMarker(a.GetValue(), p.RunID)
		require.True(t, ok, r.String())
		assert.Equal(t, want, got, r.String())
		m, err := wire.Unpack(a)
		require.NoError(t, err)
		assert.Equal(t, r.name, wire.NameOf(m))
		_, ok = findMarker(a.GetValue(), "other")
		assert.False(t, ok, "%s: another run's marker is not this run's", r)
	}
}

func TestFindMarkerRefusesMalformed(t *testing.T) {
	for _, b := range []string{
		"", "xdsconform-load/", "xdsconform-load/t", "xdsconform-load/t/", "xdsconform-load/t/1/2/3",
		"xdsconform-load/t/1/2/3/x", "xdsconform-load/t/a/2/3/g", "xdsconform-load/tt/1/2/3/g",
		"xdsconform-load/t/99999999999999999999/2/3/g", "xdsconform-load/t/1/2//g",
	} {
		_, ok := findMarker([]byte(b), "t")
		assert.False(t, ok, "%q", b)
	}
	m, ok := findMarker([]byte("junk xdsconform-load/t/1/2/3/g junk"), "t")
	assert.True(t, ok)
	assert.Equal(t, marker{res: 1, change: 2, origin: 3}, m)
}

func FuzzFindMarker(f *testing.F) {
	f.Add([]byte("xdsconform-load/t/1/2/3/g"))
	f.Add([]byte("xdsconform-load/t/1/2/3/b"))
	o := okOptions()
	p, _ := newPlan(o)
	a, _ := p.build(0, marker{change: 1, origin: 2})
	f.Add(a.GetValue())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok := findMarker(b, "t")
		if ok && (m.res < 0 || m.change < 0 || m.origin < 0) {
			t.Fatalf("negative field from %q: %+v", b, m)
		}
	})
}
