package accesslog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/runner/live"
	"github.com/softalloc/softalloc/internal/workload"
)

// apacheLog is a server that logs as the testbed's Apache is asked to:
// combined, with the arrival's milliseconds (%{msec_frac}t) and %D, each
// line written when the request is done. It tells the client, in headers,
// how late each request reached it and when it was done, so that the test
// knows the delays a log's think times include.
type apacheLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// log is a copy of the lines written so far.
func (a *apacheLog) log() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return bytes.Clone(a.buf.Bytes())
}

func (a *apacheLog) handler(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	if sent, err := strconv.ParseInt(r.Header.Get("X-Sent"), 10, 64); err == nil {
		w.Header().Set("X-Late", strconv.FormatInt(at.UnixNano()-sent, 10))
	}
	w.Header().Set("X-End", strconv.FormatInt(time.Now().UnixNano(), 10))
	fmt.Fprint(w, "<html><body>a page</body></html>")
	d := time.Since(at)
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	a.mu.Lock()
	defer a.mu.Unlock()
	fmt.Fprintf(&a.buf, "%s - - [%s.%03d %s] \"%s %s %s\" 200 33 \"-\" \"%s\" %d\n", host,
		at.Format("02/Jan/2006:15:04:05"), at.Nanosecond()/1e6, at.Format("-0700"), r.Method, r.RequestURI, r.Proto,
		r.UserAgent(), d.Microseconds())
}

// gaps is a user's transport that measures, on the client, the think
// times between pages (from the end of a page's last answer, its body
// closed, to the next page's request), and the delays a server's log adds
// to them: the request's way to the handler, and the answer's from the
// handler's end to the body's close.
type gaps struct {
	http.RoundTripper
	asset         func(string) bool
	mu            sync.Mutex
	done, end     time.Time // the last answer's close, and its handler's end
	pages, n      int64
	gap, way, ret float64
}

func (g *gaps) RoundTrip(r *http.Request) (*http.Response, error) {
	now := time.Now()
	r = r.Clone(r.Context())
	r.Header.Set("X-Sent", strconv.FormatInt(now.UnixNano(), 10))
	g.mu.Lock()
	page := !g.asset(r.URL.Path)
	gap, ret := now.Sub(g.done).Seconds(), g.done.Sub(g.end).Seconds()
	counted := page && !g.done.IsZero()
	g.mu.Unlock()
	resp, err := g.RoundTripper.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	late, err1 := strconv.ParseInt(resp.Header.Get("X-Late"), 10, 64)
	end, err2 := strconv.ParseInt(resp.Header.Get("X-End"), 10, 64)
	g.mu.Lock()
	if page {
		g.pages++
	}
	if counted {
		g.n++
		g.gap += gap
		if err1 == nil { // a server of the test's: it says how late the request came
			g.ret += ret
			g.way += float64(late) / 1e9
		}
	}
	g.mu.Unlock()
	resp.Body = &body{ReadCloser: resp.Body, g: g, end: time.Unix(0, end), ok: err2 == nil}
	return resp, nil
}

type body struct {
	io.ReadCloser
	g    *gaps
	end  time.Time
	ok   bool
	once sync.Once
}

func (b *body) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() {
		b.g.mu.Lock()
		defer b.g.mu.Unlock()
		b.g.done, b.g.end = time.Now(), b.end
		if !b.ok {
			b.g.end = b.g.done
		}
	})
	return err
}

// load is what runUsers measured; times in seconds.
type load struct {
	slept float64 // the mean think time slept
	gap   float64 // the mean gap between pages the clients saw
	// late and back are the mean delays the log's gaps add: a page's
	// request on its way to the handler, the previous answer on its way back.
	late, back float64
	pages      []int64 // each user's pages
	gaps       int64   // the gaps measured
	errs       live.ErrorCounts
}

// runUsers runs the load generator with users users of w for runtime, each
// a Load of its own from a loopback address of its own (a log tells users
// apart by their address and user agent; one Load's users share both).
func runUsers(t *testing.T, w *workload.Workload, target *url.URL, users int, think, runtime time.Duration) load {
	t.Helper()
	var mu sync.Mutex
	var ld load
	var slept, gap, late, back float64
	var thinks, n int64
	var wg sync.WaitGroup
	for i := range users {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, byte(1+i/200), byte(2+i%200))}}
		g := &gaps{RoundTripper: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 2},
			asset: func(p string) bool { return strings.HasSuffix(p, ".gif") }}
		l := &live.Load{Workload: w, Target: target, Users: 1, ThinkTime: think, RequestTimeout: 10 * time.Second,
			Timing: algorithms.Timing{Runtime: runtime}, Seed: uint64(i + 1), Transport: g}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := l.Run(context.Background())
			assert.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			slept += res.ThinkSeconds
			thinks += res.Thinks
			g.mu.Lock()
			gap, late, back, n = gap+g.gap, late+g.way, back+g.ret, n+g.n
			ld.pages = append(ld.pages, g.pages)
			g.mu.Unlock()
			ld.errs.Refused += res.Errors.Refused
			ld.errs.TimedOut += res.Errors.TimedOut
			ld.errs.ServerErrors += res.Errors.ServerErrors
			ld.errs.Other += res.Errors.Other
		}()
	}
	wg.Wait()
	require.NotZero(t, thinks)
	require.NotZero(t, n)
	ld.slept, ld.gap, ld.late, ld.back = slept/float64(thinks), gap/float64(n), late/float64(n), back/float64(n)
	ld.gaps = n
	return ld
}

// walk is the reference: the RUBBoS walk of the live runner (Back to the
// previous page, EndOfSession to the start) by users each walking from the
// start for as many pages as a user of the log did, repeated reps times. It
// gives each page's expected share of such a log, and each move's expected
// share of its page's moves (an EndOfSession is a move to the start: a log
// cannot tell a client's new session from a move; and so is a user's last
// page, as the inference has it), with their spreads over the repetitions.
func walk(w *workload.Workload, lengths []int64, reps int) (mix, mixSD []float64, moves, movesSD [][]float64) {
	n := len(w.Interactions)
	r := rand.New(rand.NewPCG(7, 7))
	mix, mixSD = make([]float64, n), make([]float64, n)
	square := func() [][]float64 {
		m := make([][]float64, n)
		for i := range m {
			m[i] = make([]float64, n)
		}
		return m
	}
	moves, movesSD = square(), square()
	var hist []int
	for range reps {
		visits := make([]float64, n)
		pairs := square()
		var total float64
		for _, k := range lengths {
			state := w.StartIndex()
			hist = hist[:0]
			for step := range k {
				visits[state]++
				total++
				if step == k-1 {
					pairs[state][w.StartIndex()]++
					break
				}
				p := w.Page(state)
				x := r.Float64()
				to := state
				for j, c := range p.Cum {
					if x < c {
						to = int(p.To[j])
						break
					}
				}
				next := to
				switch to {
				case workload.ToEndOfSession:
					next, hist = w.StartIndex(), hist[:0]
				case workload.ToBack:
					next = state
					if m := len(hist); m > 0 {
						next, hist = hist[m-1], hist[:m-1]
					}
				default:
					hist = append(hist, state)
					if len(hist) > 64 {
						hist = hist[1:]
					}
				}
				pairs[state][next]++
				state = next
			}
		}
		for i := range n {
			share := visits[i] / total
			mix[i] += share / float64(reps)
			mixSD[i] += share * share / float64(reps)
			var row float64
			for _, c := range pairs[i] {
				row += c
			}
			for j, c := range pairs[i] {
				if row > 0 {
					moves[i][j] += c / row / float64(reps)
					movesSD[i][j] += (c / row) * (c / row) / float64(reps)
				}
			}
		}
	}
	for i := range n {
		mixSD[i] = math.Sqrt(max(0, mixSD[i]-mix[i]*mix[i]))
		for j := range n {
			movesSD[i][j] = math.Sqrt(max(0, movesSD[i][j]-moves[i][j]*moves[i][j]))
		}
	}
	return mix, mixSD, moves, movesSD
}

// stationary is the mix of a workload without Back: the chain's stationary
// distribution, an EndOfSession going to the start.
func stationary(w *workload.Workload) []float64 {
	n := len(w.Interactions)
	pi := make([]float64, n)
	for i := range pi {
		pi[i] = 1 / float64(n)
	}
	for range 5000 {
		next := make([]float64, n)
		for i := range n {
			p := w.Page(i)
			prev := 0.0
			for j, c := range p.Cum {
				to := int(p.To[j])
				if to == workload.ToEndOfSession {
					to = w.StartIndex()
				}
				next[to] += pi[i] * (c - prev)
				prev = c
			}
			next[i] += pi[i] * (1 - prev)
		}
		pi = next
	}
	return pi
}

// pathPattern matches the paths a workload path template renders.
func pathPattern(tmpl string) *regexp.Regexp {
	re := regexp.MustCompile(`\{(rand|pick):([^}]*)\}`)
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(tmpl, -1) {
		b.WriteString(regexp.QuoteMeta(tmpl[last:m[0]]))
		if tmpl[m[2]:m[3]] == "rand" {
			b.WriteString(`[0-9]+`)
		} else {
			words := strings.Split(tmpl[m[4]:m[5]], "|")
			for i := range words {
				words[i] = regexp.QuoteMeta(words[i])
			}
			b.WriteString("(" + strings.Join(words, "|") + ")")
		}
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(tmpl[last:]))
	return regexp.MustCompile("^" + b.String() + "$")
}

// TestInferTheTestbedWorkloadFromTheLoadGeneratorsLog runs the load
// generator with testbed/workload.yaml (its think time scaled from 500 ms
// to 20 ms) against a server that logs as Apache does, infers the
// workload from the log, and compares it with the one that made the log.
func TestInferTheTestbedWorkloadFromTheLoadGeneratorsLog(t *testing.T) {
	b, err := os.ReadFile("../../testbed/workload.yaml")
	require.NoError(t, err)
	truth, err := live.ParseWorkload(b)
	require.NoError(t, err)
	var alog apacheLog
	srv := httptest.NewServer(http.HandlerFunc(alog.handler))
	defer srv.Close()
	target, err := url.Parse(srv.URL)
	require.NoError(t, err)

	const users, think, runtime = 100, 20 * time.Millisecond, 4 * time.Second
	ld := runUsers(t, truth, target, users, think, runtime)
	require.Zero(t, ld.errs.Total(), "%+v", ld.errs)

	// A handler may still be writing a request the load's end cut short:
	// the log is read under its lock.
	in := NewInferrer(Options{})
	r := NewReader(bytes.NewReader(alog.log()), UnitAuto)
	for {
		e, ok := r.Next()
		if !ok {
			break
		}
		in.Add(e)
	}
	require.NoError(t, r.Err())
	require.Zero(t, r.Bad, r.FirstBad)
	res, err := in.Finish("from-log")
	require.NoError(t, err)
	got, err := live.ParseWorkload(res.YAML)
	require.NoError(t, err, "the load generator reads the inferred workload:\n%s", res.YAML)
	s := res.Summary
	assert.EqualValues(t, users, s.Sessions, "one session a user: a user's EndOfSession is a move to the start, within the idle gap")

	// Each inferred template is one of the workload's interactions.
	patterns := make([]*regexp.Regexp, len(truth.Interactions))
	for i, it := range truth.Interactions {
		patterns[i] = pathPattern(it.Path)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	of := make([]int, len(got.Interactions)) // inferred index -> true index
	seen := map[int]bool{}
	for i, it := range got.Interactions {
		of[i] = -1
		for range 20 { // every draw of its parameters is the same interaction's
			p := got.Page(i).Path.Render(rng, &sb)
			var match []int
			for j, re := range patterns {
				if re.MatchString(p) {
					match = append(match, j)
				}
			}
			require.Len(t, match, 1, "template %s renders %s", it.Name, p)
			require.True(t, of[i] == -1 || of[i] == match[0], "template %s renders paths of two interactions", it.Name)
			of[i] = match[0]
		}
		require.False(t, seen[of[i]], "two templates for %s", truth.Interactions[of[i]].Name)
		seen[of[i]] = true
		assert.Equal(t, truth.Interactions[of[i]].Embedded, it.Embedded, "%s: embedded", it.Name)
	}
	require.Len(t, got.Interactions, len(truth.Interactions))

	// The mix. The inferred chain keeps the log's shares (what the
	// inference could lose), within half a point. The log's shares are a
	// sample of the workload's: users that each walked from the start for
	// a few dozen pages. The reference walks the same users' page counts
	// 300 times; each share must be within 4 of its standard deviations
	// over them (a share off by 4 of them comes once in 15,000), which is
	// under 2 points when the log holds about 10,000 pages: the target's
	// 2 points per page is for such logs.
	trueMix, spread, moves, movesSD := walk(truth, ld.pages, 300)
	gotMix := stationary(got)
	var worst, worstSD, widest float64
	var worstName string
	for i := range got.Interactions {
		name := truth.Interactions[of[i]].Name
		assert.InDelta(t, s.Templates[i].Share, gotMix[i], 0.005, "%s: the chain's share against the log's", name)
		d := math.Abs(gotMix[i] - trueMix[of[i]])
		if d/spread[of[i]] > worstSD {
			worstName = fmt.Sprintf("%s %.2f%% against %.2f%%; the log's %.2f%%", name, 100*gotMix[i], 100*trueMix[of[i]], 100*s.Templates[i].Share)
		}
		worst, worstSD, widest = max(worst, d), max(worstSD, d/spread[of[i]]), max(widest, 4*spread[of[i]])
		assert.InDelta(t, trueMix[of[i]], gotMix[i], 4*spread[of[i]], "%s: share", name)
	}
	t.Logf("%d pages, %d sessions, %d templates; mix: worst %.2f points off the workload's, %.1f standard deviations (%s); the widest tolerance %.2f points",
		s.Pages, s.Sessions, len(s.Templates), worst*100, worstSD, worstName, widest*100)

	// The think time: a log's gap between pages is the user's think time
	// and the time the next request took to reach the server and the last
	// answer to reach the user; on a loopback that is tens of microseconds,
	// on a busy machine milliseconds (the test's 20 ms think times are
	// scaled down 25 times from the testbed's). The inferred mean must be
	// within 10% of the clients' gaps with these delays.
	visible := ld.gap + ld.late + ld.back
	t.Logf("think time: inferred %.2f ms over %d gaps; the clients' %d gaps %.2f ms (slept %.2f ms) and the delays %.2f ms: %.2f ms; median %.2f ms, cv %.2f",
		s.ThinkTime.Mean*1e3, s.ThinkTime.Count, ld.gaps, ld.gap*1e3, ld.slept*1e3, (ld.late+ld.back)*1e3, visible*1e3, s.ThinkTime.Median*1e3, s.ThinkTime.CV)
	assert.InEpsilon(t, visible, s.ThinkTime.Mean, 0.10)
	assert.InDelta(t, s.ThinkTime.Mean, got.ThinkTime.Mean.Duration().Seconds(), 1e-4)

	// The transitions: each move's share of its page's moves against the
	// reference's, within 4 of its standard deviations over the reference's
	// repetitions (a Back makes a user's moves depend on the pages before,
	// so they spread more than a multinomial sample of the page's views
	// would), and a fifth of a point for the moves that hardly ever happen.
	worstSE := 0.0
	for i, it := range got.Interactions {
		p := got.Page(i)
		inferred := make([]float64, len(truth.Interactions))
		prev := 0.0
		for j, c := range p.Cum {
			to := int(p.To[j])
			if to == workload.ToEndOfSession {
				to = got.StartIndex()
			}
			inferred[of[to]] += c - prev
			prev = c
		}
		inferred[of[i]] += 1 - prev
		for j, want := range moves[of[i]] {
			sd := movesSD[of[i]][j]
			if sd > 0 {
				worstSE = max(worstSE, math.Abs(inferred[j]-want)/sd)
			}
			assert.InDelta(t, want, inferred[j], 4*sd+0.002, "%s -> %s (%d views)", it.Name, truth.Interactions[j].Name, s.Templates[i].Views)
		}
	}
	t.Logf("transitions: worst %.1f standard deviations off", worstSE)

	// The load generator replays it.
	replay := runUsers(t, got, target, 5, think, 500*time.Millisecond)
	assert.Zero(t, replay.errs.Total(), "%+v", replay.errs)
}
