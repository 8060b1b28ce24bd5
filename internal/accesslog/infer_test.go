package accesslog

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/runner/live"
	"github.com/softalloc/softalloc/internal/workload"
)

// logLine writes one Apache combined line with %{msec_frac}t and %D.
func logLine(client, ua string, at time.Time, target string, status int, d time.Duration) string {
	return fmt.Sprintf(`%s - - [%s.%03d %s] "GET %s HTTP/1.1" %d 100 "-" "%s" %d`, client,
		at.Format("02/Jan/2006:15:04:05"), at.Nanosecond()/1e6, at.Format("-0700"), target, status, ua, d.Microseconds())
}

func infer(t *testing.T, o Options, lines ...string) *Result {
	t.Helper()
	in := NewInferrer(o)
	r := NewReader(strings.NewReader(strings.Join(lines, "\n")), UnitAuto)
	for {
		e, ok := r.Next()
		if !ok {
			break
		}
		in.Add(e)
	}
	require.NoError(t, r.Err())
	require.Zero(t, r.Bad, r.FirstBad)
	res, err := in.Finish("test")
	require.NoError(t, err)
	_, err = live.ParseWorkload(res.YAML)
	require.NoError(t, err, "the load generator reads it:\n%s", res.YAML)
	return res
}

func byName(res *Result) map[string]TemplateSummary {
	m := map[string]TemplateSummary{}
	for _, t := range res.Summary.Templates {
		m[t.Name] = t
	}
	return m
}

func TestTemplatesTurnIdsAndSlugsIntoParameters(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	var lines []string
	add := func(target string) {
		lines = append(lines, logLine("10.0.0.1", "ua", t0.Add(time.Duration(len(lines))*time.Second), target, 200, time.Millisecond))
	}
	for i := range 30 {
		add(fmt.Sprintf("/story/%d", 1000+i*37))
		add(fmt.Sprintf("/user/%08x-1234-4abc-8def-0123456789ab/profile", i))
		add(fmt.Sprintf("/commit/%x", 0xdeadbeef00+i))
		add(fmt.Sprintf("/blog/a-post-number-%c/", 'a'+i%26))
		add(fmt.Sprintf("/search?type=%s&q=word%c", []string{"stories", "users"}[i%2], 'a'+i))
		add("/about")
		add(fmt.Sprintf("/static/app.css?v=%d", i)) // an asset
		add("/logo.png")
	}
	res := infer(t, Options{}, lines...)
	got := byName(res)
	for _, name := range []string{"/story/*", "/user/*/profile", "/commit/*", "/blog/*/", "/search?type=stories&q=*",
		"/search?type=users&q=*", "/about"} {
		require.Contains(t, got, name, "templates: %v", got)
		want := 1 / 6.0
		if strings.HasPrefix(name, "/search") {
			want /= 2
		}
		assert.InDelta(t, want, got[name].Share, 1e-9, name)
	}
	assert.Len(t, got, 7)
	assert.Equal(t, "/story/{rand:1000:2073}", got["/story/*"].Path, "ids that seldom repeat are drawn over their range")
	assert.True(t, strings.HasPrefix(got["/blog/*/"].Path, "/blog/{pick:a-post-number-a|"), got["/blog/*/"].Path)
	assert.Equal(t, []string{"/logo.png"}, got["/about"].Embedded, "app.css?v=N differs at each view; logo.png follows every /about")
	assert.EqualValues(t, 30*8, res.Summary.Requests)
	assert.EqualValues(t, 30*6, res.Summary.Pages)
	assert.EqualValues(t, 30*2, res.Summary.Assets)
}

func TestSessionsTransitionsAndThinkTime(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	// Two clients (one address, two user agents), each A (200 ms, then a
	// 100 ms asset) -> think 2 s -> B (50 ms) -> think 3 s -> A; then an
	// hour's gap and a new session entering at B.
	var lines []string
	for _, ua := range []string{"one", "two"} {
		at := t0
		lines = append(lines,
			logLine("10.0.0.1", ua, at, "/a", 200, 200*time.Millisecond),
			logLine("10.0.0.1", ua, at.Add(200*time.Millisecond), "/img.gif", 200, 100*time.Millisecond),
			logLine("10.0.0.1", ua, at.Add(2300*time.Millisecond), "/b", 200, 50*time.Millisecond),
			logLine("10.0.0.1", ua, at.Add(5350*time.Millisecond), "/a", 200, 200*time.Millisecond),
			logLine("10.0.0.1", ua, at.Add(time.Hour), "/b", 200, 50*time.Millisecond),
			logLine("10.0.0.1", "monitor", at, "/server-status?auto", 200, time.Millisecond),
		)
	}
	res := infer(t, Options{}, lines...)
	s := res.Summary
	assert.EqualValues(t, 4, s.Sessions)
	assert.EqualValues(t, 2, s.Excluded)
	assert.EqualValues(t, 4, s.ThinkTime.Count)
	assert.InDelta(t, 2.5, s.ThinkTime.Mean, 1e-9, "the think time starts when the page's last asset was done")
	assert.InDelta(t, 2.5, res.Workload.ThinkTime.Mean.Duration().Seconds(), 1e-9)
	got := byName(res)
	assert.EqualValues(t, 2, got["/a"].Entries)
	assert.EqualValues(t, 2, got["/b"].Entries)
	assert.EqualValues(t, 2, got["/a"].Exits)
	assert.EqualValues(t, 2, got["/b"].Exits)
	// /a: 2 moves to /b, 2 exits -> half of them to /a (EndOfSession, the
	// start: entries tie, the most viewed comes first) and half to /b.
	w := res.Workload
	next := map[string]map[string]float64{}
	for _, it := range w.Interactions {
		next[it.Name] = map[string]float64{}
		for _, tr := range it.Next {
			next[it.Name][tr.To] = tr.P
		}
	}
	assert.Equal(t, "/a", w.Start)
	assert.Equal(t, map[string]float64{"/b": 0.75, workload.StateEndOfSession: 0.25}, next["/a"])
	assert.Equal(t, map[string]float64{"/a": 0.5, "/b": 0.25, workload.StateEndOfSession: 0.25}, next["/b"])
}

func TestNginxTimesAreTheRequestsEnds(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	nginx := func(at time.Time, target string, d time.Duration) string {
		return fmt.Sprintf(`10.0.0.1 - - [%s] "GET %s HTTP/1.1" 200 100 "-" "ua" %.3f`,
			at.Format("2006-01-02T15:04:05.000Z07:00"), target, d.Seconds())
	}
	// /a runs 0-1 s, /b 3-3.5 s: logged at their ends.
	res := infer(t, Options{}, nginx(t0.Add(time.Second), "/a", time.Second), nginx(t0.Add(3500*time.Millisecond), "/b", 500*time.Millisecond))
	assert.Equal(t, "nginx", res.Summary.Format)
	assert.InDelta(t, 2.0, res.Summary.ThinkTime.Mean, 1e-9)
}

func TestUserTemplatesWin(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	var lines []string
	for i := range 12 {
		lines = append(lines, logLine("10.0.0.1", "ua", t0.Add(time.Duration(i)*time.Second),
			fmt.Sprintf("/shop/%s/item?utm=%d&tab=x", []string{"shoes", "hats", "bags"}[i%3], i), 200, time.Millisecond))
	}
	p, err := ParsePattern("/shop/{category}/item?tab={tab}")
	require.NoError(t, err)
	res := infer(t, Options{Templates: []*Pattern{p}}, lines...)
	got := byName(res)
	require.Contains(t, got, "/shop/{category}/item?tab={tab}")
	path := got["/shop/{category}/item?tab={tab}"].Path
	assert.True(t, strings.HasPrefix(path, "/shop/{pick:bags|"), path)
	assert.True(t, strings.HasSuffix(path, "/item?tab=x"), "utm, not in the pattern, is left out: %s", path)

	_, err = ParsePattern("shop/{x}")
	assert.ErrorContains(t, err, "want a path starting with /")
	_, err = ParsePattern("/shop/a{x}")
	assert.ErrorContains(t, err, `"a{x}": want {name} for a whole segment or value`)
}

func TestBracesInTheLogAreEscapedInTheWorkload(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	res := infer(t, Options{MaxQueryWords: 1},
		logLine("h", "ua", t0, "/x{y}?q=a|b", 200, time.Millisecond),
		logLine("h", "ua", t0.Add(time.Second), "/x{y}?q=c}", 200, time.Millisecond))
	require.Len(t, res.Summary.Templates, 1)
	// The two values are drawn in proportion to their views: either may
	// come twice.
	assert.Regexp(t, `^/x%7By%7D\?q=(a%7Cb|c%7D|\{pick:(a%7Cb|c%7D)\|(a%7Cb|c%7D)\})$`, res.Summary.Templates[0].Path)
}
