package accesslog

import (
	"fmt"
	"math/rand/v2"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A request's target is a path and a query; each path segment and each
// query value is a slot. A slot is a parameter when its value has the form
// of an id (digits, a UUID, a hex hash, and in a path a slug), or when the
// same place holds more distinct words than a page type would have
// (Options.MaxQueryWords, MaxPathWords): a search term, a product's name.
// The other slots are literal and tell page types apart
// (Search?type=stories from Search?type=users).

type form uint8

const (
	formWord form = iota // a literal candidate
	formNum
	formUUID
	formHex
	formSlug
)

var (
	reUUID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	reHex  = regexp.MustCompile(`^[0-9a-fA-F]{8,}$`)
	// A slug: lowercase words and numbers joined by hyphens or underscores.
	reSlug = regexp.MustCompile(`^[a-z0-9]+(?:[-_][a-z0-9]+)+$`)
)

// classify says what a slot's value looks like; slugs count in paths only
// (a query value with hyphens is a word until it is one of many).
func classify(v string, inPath bool) form {
	switch {
	case v == "":
		return formWord
	case isDigits(v):
		return formNum
	case reUUID.MatchString(v):
		return formUUID
	case reHex.MatchString(v) && strings.ContainsAny(v, "0123456789"):
		return formHex
	case inPath && reSlug.MatchString(v) && isSlug(v):
		return formSlug
	}
	return formWord
}

func isDigits(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// isSlug: three words or more ("hello-world-again"), or two with a number
// ("post-42"); two words alone ("wp-admin", "about-us") are more often a
// fixed page's name.
func isSlug(v string) bool {
	seps := strings.Count(v, "-") + strings.Count(v, "_")
	return seps >= 2 || strings.ContainsAny(v, "0123456789")
}

// target is a request target split into slots.
type target struct {
	segs []string // path segments: "/a/b/" is a, b, ""
	keys []string // query keys in order
	eq   []bool   // whether the key had "="
	vals []string
}

func splitTarget(t string) target {
	var tg target
	p, q, hasQ := strings.Cut(t, "?")
	p, _, _ = strings.Cut(p, "#")
	tg.segs = strings.Split(strings.TrimPrefix(p, "/"), "/")
	if hasQ && q != "" {
		q, _, _ = strings.Cut(q, "#")
		for _, kv := range strings.Split(q, "&") {
			if kv == "" {
				continue
			}
			k, v, eq := strings.Cut(kv, "=")
			tg.keys = append(tg.keys, k)
			tg.eq = append(tg.eq, eq)
			tg.vals = append(tg.vals, v)
		}
	}
	return tg
}

// slots is the number of slots: segments, then query values.
func (t *target) slots() int { return len(t.segs) + len(t.vals) }

func (t *target) slot(i int) string {
	if i < len(t.segs) {
		return t.segs[i]
	}
	return t.vals[i-len(t.segs)]
}

// isPageExt says whether a path's extension is a page's: none, or one of
// exts.
func pageExtension(p string, exts map[string]bool) (ext string, page bool) {
	base := path.Base(p)
	i := strings.LastIndexByte(base, '.')
	if i <= 0 || i == len(base)-1 {
		return "", true
	}
	ext = strings.ToLower(base[i+1:])
	return ext, exts[ext]
}

// DefaultPageExtensions are the extensions of pages (a path without one is
// a page too); other extensions are static assets.
var DefaultPageExtensions = []string{"html", "htm", "shtml", "xhtml", "php", "jsp", "jspx", "asp", "aspx", "do", "action", "cgi", "pl", "py", "cfm"}

// sample keeps a uniform sample of a slot's values (reservoir sampling) and
// whether every value was an integer, with their range.
type sample struct {
	n        int64
	vals     []string
	allInt   bool
	min, max int64
}

func newSample() *sample { return &sample{allInt: true} }

func (s *sample) add(v string, k int, r *rand.Rand) {
	s.n++
	if s.allInt {
		if x, err := strconv.ParseInt(v, 10, 64); err == nil && isDigits(v) && len(v) < 16 {
			if s.n == 1 || x < s.min {
				s.min = x
			}
			if s.n == 1 || x > s.max {
				s.max = x
			}
		} else {
			s.allInt = false
		}
	}
	if len(s.vals) < k {
		s.vals = append(s.vals, v)
	} else if j := r.Int64N(s.n); j < int64(k) {
		s.vals[j] = v
	}
}

// merge combines samples of parts of one stream into a sample of k values
// drawn in proportion to each part's count.
func merge(parts []*sample, k int, r *rand.Rand) *sample {
	if len(parts) == 1 {
		return parts[0]
	}
	out := &sample{allInt: true}
	var first = true
	for _, p := range parts {
		out.n += p.n
		out.allInt = out.allInt && p.allInt
		if p.allInt && p.n > 0 {
			if first || p.min < out.min {
				out.min = p.min
			}
			if first || p.max > out.max {
				out.max = p.max
			}
			first = false
		}
	}
	for range min(int64(k), out.n) {
		x := r.Int64N(out.n)
		for _, p := range parts {
			if x < p.n {
				out.vals = append(out.vals, p.vals[r.IntN(len(p.vals))])
				break
			}
			x -= p.n
		}
	}
	return out
}

// placeholder is the slot's part of a workload path: {rand:LO:HI} for
// integers that seldom repeat (ids drawn over their range, so that a replay
// touches as many rows as the log did), {pick:...} of the sample otherwise
// (each value as often as it came), the value itself when it is the only one.
func (s *sample) placeholder() string {
	distinct := map[string]bool{}
	for _, v := range s.vals {
		distinct[v] = true
	}
	switch {
	case len(distinct) == 1:
		return escapeLiteral(s.vals[0])
	case s.allInt && s.n > 0 && 2*len(distinct) > len(s.vals):
		return fmt.Sprintf("{rand:%d:%d}", s.min, s.max)
	}
	words := make([]string, len(s.vals))
	for i, v := range s.vals {
		words[i] = escapeWord(v)
	}
	slices.Sort(words) // a stable file; the draw is uniform over the list either way
	return "{pick:" + strings.Join(words, "|") + "}"
}

// escapeLiteral percent-encodes the bytes a workload path gives a meaning
// to (its placeholders' braces); a server decodes them as it decodes the
// logged target.
func escapeLiteral(v string) string {
	return strings.NewReplacer("{", "%7B", "}", "%7D").Replace(v)
}

// escapeWord also encodes a pick's separator.
func escapeWord(v string) string {
	return strings.NewReplacer("{", "%7B", "}", "%7D", "|", "%7C").Replace(v)
}
