package accesslog

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Format says what a log's time means: Apache logs when the request
// arrived (%t), nginx when the answer was sent ($time_local), so that a
// request's start there is the time less its duration.
type Format int

// The formats; Auto takes a log whose durations have a decimal point
// ($request_time) for nginx's, any other for Apache's.
const (
	FormatAuto Format = iota
	FormatApache
	FormatNginx
)

// ParseFormat reads auto, apache (or combined, common) or nginx.
func ParseFormat(s string) (Format, error) {
	switch s {
	case "", "auto":
		return FormatAuto, nil
	case "apache", "combined", "common":
		return FormatApache, nil
	case "nginx":
		return FormatNginx, nil
	}
	return 0, fmt.Errorf("want a log format auto, combined (Apache's combined or common) or nginx, got %q", s)
}

func (f Format) String() string {
	return [...]string{"auto", "apache", "nginx"}[f]
}

// Options tune the inference; the zero value takes the defaults.
type Options struct {
	// Format says what the logged time means (FormatAuto: from the durations).
	Format Format
	// IdleGap ends a client's session (default 30 minutes, the usual web
	// analytics rule).
	IdleGap time.Duration
	// PageExtensions are the extensions of pages, besides none (default
	// DefaultPageExtensions); requests for other extensions are assets.
	PageExtensions []string
	// Exclude leaves out every request whose target matches one of them
	// (default DefaultExclude: monitoring endpoints).
	Exclude []*regexp.Regexp
	// Templates are the user's page templates, tried first.
	Templates []*Pattern
	// Sample is how many values of each parameter are kept to draw from
	// (default 100).
	Sample int
	// MaxQueryWords and MaxPathWords are how many distinct words one
	// query key or path segment may hold and still tell page types apart
	// (defaults 10 and 25); past that it is a parameter.
	MaxQueryWords, MaxPathWords int
	// Seed makes the samples repeatable.
	Seed uint64
	// CutEnds takes a session's end for a cut (a load test's trial ended),
	// not a user leaving: the transitions are the moves alone, and a
	// session's exit goes nowhere. Trials of a few dozen pages a user end
	// most sessions so, and their exits would send the chain back to the
	// start too often.
	CutEnds bool
}

// DefaultExclude are monitoring endpoints: a scraper's requests are not a
// user's pages.
var DefaultExclude = []*regexp.Regexp{
	regexp.MustCompile(`^/(server-status|server-info|nginx_status|stub_status|status|ping|fpm-status|fpm-ping|healthz?|livez|readyz|metrics)(\?|/|$)`),
}

func (o *Options) defaults() {
	if o.IdleGap <= 0 {
		o.IdleGap = 30 * time.Minute
	}
	if o.PageExtensions == nil {
		o.PageExtensions = DefaultPageExtensions
	}
	if o.Exclude == nil {
		o.Exclude = DefaultExclude
	}
	if o.Sample <= 0 {
		o.Sample = 100
	}
	if o.MaxQueryWords <= 0 {
		o.MaxQueryWords = 10
	}
	if o.MaxPathWords <= 0 {
		o.MaxPathWords = 25
	}
}

// maxAssets bounds the assets remembered after one page view, and the
// distinct ones per template.
const maxAssets = 32

// thinkSample is how many think times are kept for the quantiles.
const thinkSample = 10000

// Inferrer builds a workload from a log's entries, given in log order.
// Its memory grows with the page templates and the clients active within
// the idle gap, not with the log.
type Inferrer struct {
	o       Options
	pageExt map[string]bool
	r       *rand.Rand

	raws  map[string]*raw
	list  []*raw
	cards map[string]*card
	trans map[[2]int32]int64

	sessions   map[string]*session
	now        time.Time
	sinceSweep int

	format    Format
	durations bool
	think     thinkStats
	counts    Counts
}

// Counts are what became of the log's requests.
type Counts struct {
	Requests int64 `json:"requests"`
	Pages    int64 `json:"pages"`
	Assets   int64 `json:"assets"`
	// Excluded matched Exclude; Other are neither pages nor assets
	// (methods other than GET, redirects, client errors, bad request lines).
	Excluded int64 `json:"excluded"`
	Other    int64 `json:"other"`
	Sessions int64 `json:"sessions"`
}

const (
	entryState int32 = -1
	exitState  int32 = -2
)

// raw is a page template as first seen: some of its literal slots may turn
// out to be parameters once their place has held many words.
type raw struct {
	id      int32
	pattern int // index of the user's template, or -1
	nsegs   int
	keys    []string
	eq      []bool
	param   []bool // per slot
	lits    []string
	cardKey []string // per literal slot: its place's words
	samples []*sample
	views   int64
	assets  map[string]*assetStat
}

type assetStat struct {
	views int64
	pos   float64
}

// card counts the distinct words of one place until they are too many.
type card struct {
	words map[string]struct{}
	param bool
}

type session struct {
	page      int32 // the current page's raw template, or entryState
	pageStart time.Time
	end       time.Time // when the page and its assets were done
	last      time.Time // the session's latest request's end
	assets    []string
}

type thinkStats struct {
	n, negative int64
	sum, sumSq  float64
	vals        []float64
}

// NewInferrer starts an inference.
func NewInferrer(o Options) *Inferrer {
	o.defaults()
	in := &Inferrer{o: o, pageExt: map[string]bool{}, r: rand.New(rand.NewPCG(o.Seed, 0x5eed)),
		raws: map[string]*raw{}, cards: map[string]*card{}, trans: map[[2]int32]int64{},
		sessions: map[string]*session{}, format: o.Format}
	for _, e := range o.PageExtensions {
		in.pageExt[strings.ToLower(strings.TrimPrefix(e, "."))] = true
	}
	return in
}

// Add takes the log's next entry.
func (in *Inferrer) Add(e Entry) {
	in.counts.Requests++
	if e.HasDuration {
		in.durations = true
		if in.format == FormatAuto {
			in.format = FormatApache
			if e.DecimalDuration {
				in.format = FormatNginx
			}
		}
	}
	start, end := e.Time, e.Time.Add(e.Duration)
	if in.format == FormatNginx {
		start, end = e.Time.Add(-e.Duration), e.Time
	}
	// A control character is no page's (Apache and nginx escape them; a
	// workload's names cannot hold them).
	if e.Method == "" || !strings.HasPrefix(e.Target, "/") || strings.IndexFunc(e.Target, unicode.IsControl) >= 0 {
		in.counts.Other++
		return
	}
	for _, x := range in.o.Exclude {
		if x.MatchString(e.Target) {
			in.counts.Excluded++
			return
		}
	}
	p, _, _ := strings.Cut(e.Target, "?")
	_, isPage := pageExtension(p, in.pageExt)
	ok := e.Method == "GET" && (e.Status < 300 || e.Status == 304 || e.Status >= 500)
	switch {
	case ok && isPage:
		in.counts.Pages++
	case e.Method == "GET" && !isPage && e.Status < 400:
		in.counts.Assets++
	default:
		in.counts.Other++
		return
	}
	if start.After(in.now) {
		in.now = start
	}
	key := e.Client + "\x00" + e.UserAgent
	s := in.sessions[key]
	if s != nil && start.Sub(s.last) > in.o.IdleGap {
		in.closeSession(s)
		s = nil
	}
	if s == nil {
		s = &session{page: entryState}
		in.sessions[key] = s
		in.counts.Sessions++
	}
	if end.After(s.last) {
		s.last = end
	}
	if isPage {
		id := in.template(e.Target)
		if s.page != entryState {
			in.think.add(start.Sub(s.end).Seconds(), in.r)
			in.closeView(s)
		}
		in.trans[[2]int32{s.page, id}]++
		s.page, s.pageStart, s.end, s.assets = id, start, end, s.assets[:0]
	} else if s.page != entryState {
		// An asset after a page is part of it: the think time starts when
		// the last of them was done.
		if end.After(s.end) {
			s.end = end
		}
		if len(s.assets) < maxAssets && !slices.Contains(s.assets, e.Target) {
			s.assets = append(s.assets, e.Target)
		}
	}
	if in.sinceSweep++; in.sinceSweep >= 4096 {
		in.sinceSweep = 0
		in.sweep()
	}
}

// sweep ends the sessions idle for longer than the gap, so that memory
// holds the clients of the last gap only.
func (in *Inferrer) sweep() {
	for k, s := range in.sessions {
		if in.now.Sub(s.last) > in.o.IdleGap {
			in.closeSession(s)
			delete(in.sessions, k)
		}
	}
}

func (in *Inferrer) closeView(s *session) {
	r := in.list[s.page]
	for j, a := range s.assets {
		st := r.assets[a]
		if st == nil {
			if len(r.assets) >= maxAssets {
				continue
			}
			st = &assetStat{}
			r.assets[a] = st
		}
		st.views++
		st.pos += float64(j)
	}
}

func (in *Inferrer) closeSession(s *session) {
	if s.page == entryState {
		return
	}
	in.closeView(s)
	in.trans[[2]int32{s.page, exitState}]++
	s.page = entryState
}

func (t *thinkStats) add(x float64, r *rand.Rand) {
	t.n++
	t.sum += x
	t.sumSq += x * x
	if x < 0 {
		t.negative++
	}
	if len(t.vals) < thinkSample {
		t.vals = append(t.vals, x)
	} else if j := r.Int64N(t.n); j < thinkSample {
		t.vals[j] = x
	}
}

// template finds or makes the raw template of a page's target, and samples
// its parameters.
func (in *Inferrer) template(tgt string) int32 {
	t := splitTarget(tgt)
	for pi, p := range in.o.Templates {
		vals, ok := p.match(&t)
		if !ok {
			continue
		}
		key := fmt.Sprintf("u%d", pi)
		r := in.raws[key]
		if r == nil {
			r = in.newRaw(key, pi, len(p.segs), p.keys, nil, nil, nil)
			for _, s := range p.slots() {
				r.param = append(r.param, s.param)
				r.lits = append(r.lits, s.lit)
				r.samples = append(r.samples, newSample())
			}
		}
		for i, v := range vals {
			if r.param[i] {
				r.samples[i].add(v, in.o.Sample, in.r)
			}
		}
		r.views++
		return r.id
	}
	n := t.slots()
	forms := make([]form, n)
	shape := make([]string, n) // by form alone: the places' keys
	for i := range n {
		forms[i] = classify(t.slot(i), i < len(t.segs))
		shape[i] = t.slot(i)
		if forms[i] != formWord {
			shape[i] = "\x01"
		}
	}
	cardKeys := make([]string, n)
	param := make([]bool, n)
	var kb strings.Builder
	for i := range n {
		if forms[i] == formWord {
			if i < len(t.segs) {
				cardKeys[i] = fmt.Sprintf("p%d/%d/%s", len(t.segs), i, strings.Join(shape[:i], "/"))
			} else {
				cardKeys[i] = "q" + strings.Join(shape[:len(t.segs)], "/") + "?" + t.keys[i-len(t.segs)]
			}
			param[i] = in.word(cardKeys[i], t.slot(i), i < len(t.segs))
		} else {
			param[i] = true
		}
		if param[i] {
			kb.WriteString("\x01")
		} else {
			kb.WriteString(t.slot(i))
		}
		if i == len(t.segs)-1 {
			kb.WriteString("?")
		} else {
			kb.WriteString("\x00")
		}
		if i >= len(t.segs) {
			kb.WriteString(t.keys[i-len(t.segs)])
			if t.eq[i-len(t.segs)] {
				kb.WriteString("=")
			}
			kb.WriteString("&")
		}
	}
	key := kb.String()
	r := in.raws[key]
	if r == nil {
		r = in.newRaw(key, -1, len(t.segs), t.keys, t.eq, param, cardKeys)
		for i := range n {
			if param[i] {
				r.lits = append(r.lits, "")
				r.samples = append(r.samples, newSample())
			} else {
				r.lits = append(r.lits, t.slot(i))
				r.samples = append(r.samples, nil)
			}
		}
	}
	for i := range n {
		if r.param[i] {
			r.samples[i].add(t.slot(i), in.o.Sample, in.r)
		}
	}
	r.views++
	return r.id
}

func (in *Inferrer) newRaw(key string, pattern, nsegs int, keys []string, eq, param []bool, cardKeys []string) *raw {
	r := &raw{id: int32(len(in.list)), pattern: pattern, nsegs: nsegs, keys: slices.Clone(keys), eq: slices.Clone(eq),
		param: param, cardKey: cardKeys, assets: map[string]*assetStat{}}
	if eq == nil {
		r.eq = make([]bool, len(keys))
		for i := range r.eq {
			r.eq[i] = true
		}
	}
	in.raws[key] = r
	in.list = append(in.list, r)
	return r
}

// word counts a literal candidate in its place; true once the place has
// held too many words to be a page type.
func (in *Inferrer) word(key, v string, inPath bool) bool {
	c := in.cards[key]
	if c == nil {
		c = &card{words: map[string]struct{}{}}
		in.cards[key] = c
	}
	if c.param {
		return true
	}
	c.words[v] = struct{}{}
	limit := in.o.MaxQueryWords
	if inPath {
		limit = in.o.MaxPathWords
	}
	if len(c.words) > limit {
		c.param, c.words = true, nil
	}
	return c.param
}

// finalTemplate is a page template of the workload: raw templates merged
// once every place's parameters are known.
type finalTemplate struct {
	key     string
	raws    []*raw
	views   int64
	name    string
	path    string
	entries int64
	exits   int64
	out     map[int]int64 // transitions to other final templates' indexes
	embed   []string
}

// Counts are the requests as the entries so far went.
func (in *Inferrer) Counts() Counts { return in.counts }

func (in *Inferrer) finals() []*finalTemplate {
	byKey := map[string]*finalTemplate{}
	var out []*finalTemplate
	for _, r := range in.list {
		param := slices.Clone(r.param)
		for i, ck := range r.cardKey {
			if ck != "" && in.cards[ck] != nil && in.cards[ck].param {
				param[i] = true
			}
		}
		key := fmt.Sprintf("%d|%d|%q|%v|%v", r.pattern, r.nsegs, r.keys, r.eq, param)
		for i, p := range param {
			if !p {
				key += "|" + r.lits[i]
			}
		}
		f := byKey[key]
		if f == nil {
			f = &finalTemplate{key: key, out: map[int]int64{}}
			byKey[key] = f
			out = append(out, f)
		}
		f.raws = append(f.raws, r)
		f.views += r.views
	}
	return out
}

// render writes a final template's path and name: each slot a literal or
// a placeholder drawn from the merged samples of its raws.
func (in *Inferrer) render(f *finalTemplate) {
	r0 := f.raws[0]
	n := len(r0.lits)
	var path, name strings.Builder
	path.WriteString("/")
	name.WriteString("/")
	for i := range n {
		if i > 0 && i < r0.nsegs {
			path.WriteString("/")
			name.WriteString("/")
		}
		if i >= r0.nsegs {
			k := i - r0.nsegs
			sep := "&"
			if k == 0 {
				sep = "?"
			}
			path.WriteString(sep + escapeLiteral(r0.keys[k]))
			name.WriteString(sep + r0.keys[k])
			if !r0.eq[k] {
				continue
			}
			path.WriteString("=")
			name.WriteString("=")
		}
		var parts []*sample
		literal := true
		for _, r := range f.raws {
			if r.param[i] {
				literal = false
				parts = append(parts, r.samples[i])
			} else {
				s := &sample{n: r.views, vals: []string{r.lits[i]}, allInt: isDigits(r.lits[i])}
				if s.allInt {
					var x int64
					fmt.Sscan(r.lits[i], &x)
					s.min, s.max = x, x
				}
				parts = append(parts, s)
				if r.lits[i] != r0.lits[i] {
					literal = false
				}
			}
		}
		if literal {
			path.WriteString(escapeLiteral(r0.lits[i]))
			name.WriteString(r0.lits[i])
			continue
		}
		s := merge(parts, in.o.Sample, in.r)
		path.WriteString(s.placeholder())
		name.WriteString("*")
	}
	f.path, f.name = path.String(), name.String()
	if r0.pattern >= 0 {
		f.name = in.o.Templates[r0.pattern].String()
	}
	// Embedded: the assets fetched after at least half of the views, in
	// their usual order.
	type asset struct {
		path  string
		views int64
		pos   float64
	}
	all := map[string]*asset{}
	var order []*asset
	for _, r := range f.raws {
		for p, st := range r.assets {
			a := all[p]
			if a == nil {
				a = &asset{path: p}
				all[p] = a
				order = append(order, a)
			}
			a.views += st.views
			a.pos += st.pos
		}
	}
	slices.SortFunc(order, func(a, b *asset) int {
		return cmpFloat(a.pos/float64(a.views), b.pos/float64(b.views), a.path, b.path)
	})
	for _, a := range order {
		if 2*a.views >= f.views && strings.HasPrefix(a.path, "/") {
			f.embed = append(f.embed, escapeLiteral(a.path))
		}
	}
}

func cmpFloat(a, b float64, sa, sb string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return strings.Compare(sa, sb)
}

// quantile of sorted xs.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[int(math.Min(float64(len(xs)-1), q*float64(len(xs))))]
}
