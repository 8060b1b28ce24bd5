package workload

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Template is a URL path with {rand:LO:HI} and {pick:a|b} parts, drawn anew
// at each Render.
type Template struct {
	parts []part
}

type part struct {
	kind   int // partText, partRand or partPick
	text   string
	lo, hi int
	words  []string
}

const (
	partText = iota
	partRand
	partPick
)

var placeholder = regexp.MustCompile(`\{(rand|pick):([^}]*)\}`)

// ParseTemplate reads a path starting with "/" that may hold {rand:LO:HI}
// (a uniform integer in [LO, HI]) and {pick:a|b|c} (one of the words).
func ParseTemplate(p string) (*Template, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("want a path starting with /, got %q", p)
	}
	t := &Template{}
	last := 0
	for _, m := range placeholder.FindAllStringSubmatchIndex(p, -1) {
		t.parts = append(t.parts, part{text: p[last:m[0]]})
		kind, arg := p[m[2]:m[3]], p[m[4]:m[5]]
		switch kind {
		case "rand":
			lo, hi, ok := strings.Cut(arg, ":")
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			// Render draws from HI-LO+1 values: that count must be an int.
			if !ok || err1 != nil || err2 != nil || b < a || uint64(b)-uint64(a) >= math.MaxInt64 {
				return nil, fmt.Errorf("%q: want {rand:LO:HI} with integers LO <= HI, less than 2^63 apart", "{rand:"+arg+"}")
			}
			t.parts = append(t.parts, part{kind: partRand, lo: a, hi: b})
		case "pick":
			t.parts = append(t.parts, part{kind: partPick, words: strings.Split(arg, "|")})
		}
		last = m[1]
	}
	t.parts = append(t.parts, part{text: p[last:]})
	for _, q := range t.parts {
		if strings.ContainsAny(q.text, "{}") {
			return nil, fmt.Errorf("unknown placeholder in %q; want {rand:LO:HI} or {pick:a|b}", p)
		}
	}
	return t, nil
}

// IntN is what Render draws with: a uniform integer in [0, n), n > 0
// (*math/rand/v2.Rand is one).
type IntN interface{ IntN(n int) int }

// Render draws the template's parts from r and writes the path into b,
// which it resets; the path is returned.
func (t *Template) Render(r IntN, b *strings.Builder) string {
	b.Reset()
	for _, p := range t.parts {
		switch p.kind {
		case partPick:
			b.WriteString(p.words[r.IntN(len(p.words))])
		case partRand:
			b.WriteString(strconv.Itoa(p.lo + r.IntN(p.hi-p.lo+1)))
		default:
			b.WriteString(p.text)
		}
	}
	return b.String()
}
