package accesslog

import (
	"fmt"
	"regexp"
	"strings"
)

// Pattern is a page template the user gives, overriding the inferred ones:
// a path and query where {name} stands for one path segment or one query
// value, a parameter ("/shop/{category}/{product}", "/search?q={q}").
// A request matches when its path has the same segments, literal ones
// equal, and its query has each of the pattern's keys (literal values
// equal); the query keys the pattern lacks are left out of the replay.
type Pattern struct {
	src  string
	segs []patSlot
	keys []string
	vals []patSlot
}

type patSlot struct {
	param bool
	lit   string
}

var reParam = regexp.MustCompile(`^\{[A-Za-z0-9_.-]*\}$`)

// ParsePattern reads a pattern such as /product/{id}?tab={tab}.
func ParsePattern(s string) (*Pattern, error) {
	if !strings.HasPrefix(s, "/") {
		return nil, fmt.Errorf("template %q: want a path starting with /, such as /product/{id}", s)
	}
	p := &Pattern{src: s}
	slot := func(v string) (patSlot, error) {
		if reParam.MatchString(v) {
			return patSlot{param: true}, nil
		}
		if strings.ContainsAny(v, "{}") {
			return patSlot{}, fmt.Errorf("template %q: %q: want {name} for a whole segment or value, or a literal without braces", s, v)
		}
		return patSlot{lit: v}, nil
	}
	t := splitTarget(s)
	for _, seg := range t.segs {
		sl, err := slot(seg)
		if err != nil {
			return nil, err
		}
		p.segs = append(p.segs, sl)
	}
	for i, k := range t.keys {
		if k == "" || strings.ContainsAny(k, "{}") {
			return nil, fmt.Errorf("template %q: want a query key name, got %q", s, k)
		}
		sl, err := slot(t.vals[i])
		if err != nil {
			return nil, err
		}
		p.keys = append(p.keys, k)
		p.vals = append(p.vals, sl)
	}
	return p, nil
}

// String is the pattern as given.
func (p *Pattern) String() string { return p.src }

// slots are the pattern's path segments, then its query values.
func (p *Pattern) slots() []patSlot { return append(append([]patSlot(nil), p.segs...), p.vals...) }

// match gives the request's value of each of the pattern's slots, or false.
func (p *Pattern) match(t *target) ([]string, bool) {
	if len(t.segs) != len(p.segs) {
		return nil, false
	}
	out := make([]string, 0, len(p.segs)+len(p.vals))
	for i, s := range p.segs {
		if !s.param && s.lit != t.segs[i] {
			return nil, false
		}
		out = append(out, t.segs[i])
	}
	for i, k := range p.keys {
		j := -1
		for m, tk := range t.keys {
			if tk == k {
				j = m
				break
			}
		}
		if j < 0 || (!p.vals[i].param && p.vals[i].lit != t.vals[j]) {
			return nil, false
		}
		out = append(out, t.vals[j])
	}
	return out, true
}
