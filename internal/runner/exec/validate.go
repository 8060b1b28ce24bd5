package exec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/oneline"
)

// InvalidObservationError lists what is wrong with a program's observation,
// each problem naming its field ("observation.servers[2].cpu: want a number
// in [0,1], got \"95%\"").
type InvalidObservationError struct {
	Problems []string
}

func (e *InvalidObservationError) Error() string {
	const show = 8
	p := e.Problems
	more := ""
	if len(p) > show {
		more = fmt.Sprintf("; and %d more", len(p)-show)
		p = p[:show]
	}
	return "invalid observation: " + strings.Join(p, "; ") + more
}

// kind is a JSON type as the protocol uses it.
type kind int

const (
	kindNumber kind = iota
	kindInteger
	kindString
	kindObject // fixed fields
	kindArray
	kindMap // free keys, values of one shape
	kindBool
)

// shape describes one JSON value of the observation. It is checked on the
// generic decoding first, because encoding/json's own type errors name Go
// types and hide the value ("cannot unmarshal string into Go struct field
// .servers.cpu of type float64"); a user needs the field and what was there.
type shape struct {
	kind   kind
	want   string  // the same words as Observation.Validate's messages
	fields []field // kindObject
	elem   *shape  // kindArray, kindMap
}

type field struct {
	name     string
	required bool
	shape    *shape
}

func number(want string) *shape  { return &shape{kind: kindNumber, want: want} }
func integer(want string) *shape { return &shape{kind: kindInteger, want: want} }
func text(want string) *shape    { return &shape{kind: kindString, want: want} }
func boolean(want string) *shape { return &shape{kind: kindBool, want: want} }

// observationShape is the observation message. Keep it, Response and
// docs/exec-protocol.schema.json in step: a test compares them.
var observationShape = &shape{kind: kindObject, want: "a JSON object", fields: []field{
	{"protocolVersion", true, integer(fmt.Sprintf("the integer %d", ProtocolVersion))},
	{"runtimeSeconds", true, number("a positive number")},
	{"throughput", true, number("a number >= 0")},
	{"responseTimes", true, &shape{kind: kindObject, want: "an object with buckets and sum", fields: []field{
		{"buckets", true, &shape{kind: kindArray, want: "a list of {le, count}", elem: &shape{
			kind: kindObject, want: "an object {le, count}", fields: []field{
				{"le", true, number("a finite number above the previous bound")},
				{"count", true, integer("an integer >= 0")},
			}}}},
		{"sum", true, number("a number >= 0")},
	}}},
	{"servers", true, &shape{kind: kindArray, want: "a list of servers", elem: &shape{
		kind: kindObject, want: "a server object", fields: []field{
			{"name", true, text("a server name")},
			{"tier", true, text("a tier name")},
			{"cpu", true, number("a number in [0,1]")},
			{"resources", false, &shape{kind: kindMap, want: "an object of utilisations", elem: number("a number in [0,1]")}},
			{"pools", false, &shape{kind: kindArray, want: "a list of pools", elem: &shape{
				kind: kindObject, want: "a pool object", fields: []field{
					{"name", true, text("a pool name")},
					{"size", true, integer("an integer >= 0")},
					{"busy", true, number("a number >= 0")},
					{"fullShare", true, number("a number in [0,1], or negative for unknown")},
					{"busyHalfWidth", false, number("a half-width >= 0")},
				}}}},
			{"throughput", true, number("a number >= 0")},
			{"responseTime", true, number("a number of seconds >= 0")},
			{"gcShare", false, number("a number in [0,1]")},
			{"throttled", false, number("a number in [0,1]")},
			{"cpuHalfWidth", false, number("a half-width >= 0")},
		}}}},
	{"drops", false, integer("an integer >= 0")},
	{"retries", false, integer("an integer >= 0")},
	{"errors", false, integer("an integer >= 0")},
	// A program that measures its window as a series may give intervals
	// (docs/exec-protocol.md, "Adaptive trials").
	{"throughputHalfWidth", false, number("a half-width >= 0")},
	{"goodput", false, &shape{kind: kindArray, want: "a list of {sla, goodput, halfWidth}", elem: &shape{
		kind: kindObject, want: "an object {sla, goodput, halfWidth}", fields: []field{
			{"sla", true, number("a threshold in seconds > 0")},
			{"goodput", true, number("a number >= 0")},
			{"halfWidth", true, number("a half-width >= 0")},
		}}}},
	{"window", false, &shape{kind: kindObject, want: "a window object", fields: []field{
		{"warmUpSeconds", true, number("a number >= 0")},
		{"transientSeconds", false, number("a number >= 0")},
		{"intervalSeconds", true, number("a number >= 0")},
		{"batches", true, integer("an integer >= 0")},
		{"precision", false, number("a share in [0,1)")},
		{"precise", true, boolean("true or false")},
		{"limit", false, text("a figure's name")},
		{"excess", false, number("a number >= 0")},
	}}},
}}

// maxProblems bounds the list: past a few, more names do not help.
const maxProblems = 20

type checker struct{ problems []string }

func (c *checker) add(path, format string, args ...any) {
	if len(c.problems) < maxProblems {
		c.problems = append(c.problems, path+": "+fmt.Sprintf(format, args...))
	}
}

// check walks v against s; path names v ("observation.servers[2]").
func (c *checker) check(path string, v any, s *shape) {
	switch s.kind {
	case kindNumber:
		n, ok := v.(json.Number)
		if !ok {
			c.add(path, "want %s, got %s", s.want, raw(v))
			return
		}
		if f, err := n.Float64(); err != nil || math.IsInf(f, 0) {
			c.add(path, "want %s, got %s (out of range)", s.want, n)
		}
	case kindInteger:
		n, ok := v.(json.Number)
		if !ok {
			c.add(path, "want %s, got %s", s.want, raw(v))
			return
		}
		if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
			c.add(path, "want %s, got %s", s.want, n)
		}
	case kindString:
		if _, ok := v.(string); !ok {
			c.add(path, "want %s, got %s", s.want, raw(v))
		}
	case kindBool:
		if _, ok := v.(bool); !ok {
			c.add(path, "want %s, got %s", s.want, raw(v))
		}
	case kindArray:
		if v == nil {
			return // Go writes an empty slice as null: read it as empty
		}
		a, ok := v.([]any)
		if !ok {
			c.add(path, "want %s, got %s", s.want, raw(v))
			return
		}
		for i, e := range a {
			c.check(fmt.Sprintf("%s[%d]", path, i), e, s.elem)
		}
	case kindMap:
		if v == nil {
			return // as for lists
		}
		m, ok := v.(map[string]any)
		if !ok {
			c.add(path, "want %s, got %s", s.want, raw(v))
			return
		}
		for _, k := range sortedKeys(m) {
			if strings.IndexFunc(k, unicode.IsControl) >= 0 {
				// Observation.Validate would put the key in its message as is.
				c.add(member(path, k), "want a name without control characters")
				continue
			}
			c.check(member(path, k), m[k], s.elem)
		}
	case kindObject:
		m, ok := v.(map[string]any)
		if !ok {
			c.add(path, "want %s, got %s", s.want, raw(v))
			return
		}
		known := make(map[string]bool, len(s.fields))
		names := make([]string, len(s.fields))
		for i, f := range s.fields {
			known[f.name] = true
			names[i] = f.name
			fv, present := m[f.name]
			switch {
			case !present && f.required:
				c.add(path+"."+f.name, "missing; want %s", f.shape.want)
			case present:
				c.check(path+"."+f.name, fv, f.shape)
			}
		}
		for _, k := range sortedKeys(m) {
			if !known[k] {
				c.add(member(path, k), "unknown field; want one of %s", strings.Join(names, ", "))
			}
		}
	}
}

// member is the path of key k in the object at path. A key that a plain
// name cannot show (a newline, a quote) is quoted, so that every problem
// stays on one line.
func member(path, k string) string { return path + "." + oneline.Quote(k) }

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// raw shows a decoded value as the JSON it came from, shortened.
func raw(v any) string {
	if v == nil {
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return shorten(string(b), 60)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// maxStdout bounds what is kept of a program's stdout; an observation with
// a fine histogram is tens of kilobytes.
const maxStdout = 16 << 20

// ParseObservation reads a program's stdout: exactly one JSON object, the
// observation of experiment e. The servers must be e's, each once; they are
// returned in chain order, whatever order the program wrote them in.
func ParseObservation(stdout []byte, e algorithms.Experiment) (algorithms.Observation, error) {
	text := bytes.TrimSpace(stdout)
	if len(text) == 0 {
		return algorithms.Observation{}, errors.New("no observation on stdout: the program must print one JSON object there (diagnostics go to stderr)")
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return algorithms.Observation{}, fmt.Errorf("stdout is not a JSON observation: %v; stdout began %q", err, shorten(string(text), 120))
	}
	if _, err := dec.Token(); err != io.EOF {
		return algorithms.Observation{}, fmt.Errorf("stdout holds more than one JSON value (print diagnostics to stderr); after the first came %q",
			shorten(string(text[dec.InputOffset():]), 120))
	}
	var c checker
	c.check("observation", v, observationShape)
	if len(c.problems) > 0 {
		return algorithms.Observation{}, &InvalidObservationError{Problems: c.problems}
	}
	var r Response
	if err := json.Unmarshal(text, &r); err != nil {
		// The shape check admits only what decodes; keep the error anyway.
		return algorithms.Observation{}, fmt.Errorf("decode observation: %w", err)
	}
	if r.ProtocolVersion != ProtocolVersion {
		return algorithms.Observation{}, &InvalidObservationError{Problems: []string{
			fmt.Sprintf("observation.protocolVersion: want %d, got %d", ProtocolVersion, r.ProtocolVersion)}}
	}
	o, err := r.Observation.Algorithms()
	if err != nil {
		// Every range problem at once, as the shape check gives every type problem.
		return algorithms.Observation{}, &InvalidObservationError{Problems: o.Problems()}
	}
	return matchServers(o, e)
}

// matchServers checks the observation's servers against the deployment's
// and puts them in chain order. A pool the allocation sets must report the
// size it was given: a different size means the program did not apply it.
func matchServers(o algorithms.Observation, e algorithms.Experiment) (algorithms.Observation, error) {
	type want struct {
		tier  algorithms.Tier
		order int
	}
	wants := map[string]want{}
	var names []string
	for _, t := range e.Deployment.Tiers {
		for i := 0; i < t.Replicas; i++ {
			n := t.ServerName(i)
			wants[n] = want{t, len(names)}
			names = append(names, n)
		}
	}
	var c checker
	ordered := make([]algorithms.ServerObservation, len(names))
	seen := map[string]int{}
	for i, s := range o.Servers {
		f := fmt.Sprintf("observation.servers[%d]", i)
		w, ok := wants[s.Name]
		if !ok {
			c.add(f+".name", "unknown server %q; the deployment has %s", s.Name, strings.Join(names, ", "))
			continue
		}
		if j, dup := seen[s.Name]; dup {
			c.add(f+".name", "server %q already reported at servers[%d]", s.Name, j)
			continue
		}
		seen[s.Name] = i
		if s.Tier != w.tier.Name {
			c.add(f+".tier", "want %q (the tier of %s), got %q", w.tier.Name, s.Name, s.Tier)
		}
		for j, p := range s.Pools {
			if !w.tier.HasPool(p.Name) {
				continue
			}
			if set := e.Allocation[w.tier.Name].Size(p.Name); p.Size != set {
				c.add(fmt.Sprintf("%s.pools[%d].size", f, j), "want %d (the allocation's %s %s), got %d; was the allocation applied?",
					set, w.tier.Name, p.Name, p.Size)
			}
		}
		ordered[w.order] = s
	}
	var missing []string
	for _, n := range names {
		if _, ok := seen[n]; !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		c.add("observation.servers", "missing %s (want one entry for each of %s)", strings.Join(missing, ", "), strings.Join(names, ", "))
	}
	if len(c.problems) > 0 {
		return algorithms.Observation{}, &InvalidObservationError{Problems: c.problems}
	}
	o.Servers = ordered
	return o, nil
}
