package exec

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/oneline"
	"github.com/softalloc/softalloc/internal/wire"
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

// The observation is validated against the protocol's JSON Schema itself
// (protocol.schema.json, which docs/exec-protocol.schema.json links to), so
// the published schema is the one source of truth. The library's findings
// are turned into messages that name the field, what was there and what was
// wanted, in the words a program's author reads: "observation.servers[2].cpu:
// want a number in [0,1], got "95%"".

//go:embed protocol.schema.json
var schemaJSON []byte

// schemaURL is the schema's $id.
const schemaURL = "https://github.com/softalloc/softalloc/docs/exec-protocol.schema.json"

var (
	observationSchema *jsonschema.Schema
	schemaDoc         any // the schema as a document, to describe what a field wants
)

func init() {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		panic(fmt.Sprintf("exec: the embedded schema: %v", err)) // caught by every test
	}
	schemaDoc = doc
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		panic(fmt.Sprintf("exec: the embedded schema: %v", err))
	}
	if observationSchema, err = c.Compile(schemaURL + "#/$defs/observation"); err != nil {
		panic(fmt.Sprintf("exec: the embedded schema: %v", err))
	}
}

// maxProblems bounds the list: past a few, more names do not help.
const maxProblems = 20

type checker struct{ problems []string }

func (c *checker) add(path, format string, args ...any) {
	if len(c.problems) < maxProblems {
		c.problems = append(c.problems, path+": "+fmt.Sprintf(format, args...))
	}
}

// problem is one finding, sortable by where it is.
type problem struct {
	loc []string
	msg string
}

// schemaProblems validates v against the observation schema.
func schemaProblems(v any) []string {
	err := observationSchema.Validate(v)
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		if err != nil {
			return []string{"observation: " + err.Error()}
		}
		return nil
	}
	var found []problem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		found = append(found, describe(e, v)...)
	}
	walk(ve)
	sort.SliceStable(found, func(i, j int) bool {
		a, b := schemaRank(found[i].loc), schemaRank(found[j].loc)
		if c := slices.Compare(a, b); c != 0 {
			return c < 0
		}
		return found[i].msg < found[j].msg
	})
	var out []string
	for _, p := range found {
		if len(out) < maxProblems {
			out = append(out, p.msg)
		}
	}
	return out
}

// describe turns one of the library's findings into messages.
func describe(e *jsonschema.ValidationError, root any) []problem {
	node := schemaNode(e.SchemaURL)
	at := func(loc []string, format string, args ...any) problem {
		return problem{loc, fieldPath(loc) + ": " + fmt.Sprintf(format, args...)}
	}
	got := raw(valueAt(root, e.InstanceLocation))
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		var out []problem
		for _, m := range k.Missing {
			loc := append(append([]string{}, e.InstanceLocation...), m)
			out = append(out, at(loc, "missing; want %s", want(property(node, m))))
		}
		return out
	case *kind.AdditionalProperties:
		var out []problem
		for _, p := range k.Properties {
			loc := append(append([]string{}, e.InstanceLocation...), p)
			out = append(out, at(loc, "unknown field; want one of %s", strings.Join(propertyNames(e.SchemaURL), ", ")))
		}
		return out
	case *kind.PropertyNames:
		loc := append(append([]string{}, e.InstanceLocation...), k.Property)
		return []problem{at(loc, "want a name without control characters")}
	case *kind.Const:
		return []problem{at(e.InstanceLocation, "want %s, got %s", want(node), got)}
	}
	return []problem{at(e.InstanceLocation, "want %s, got %s", want(node), got)}
}

// want says in words what a schema node accepts.
func want(n map[string]any) string {
	if n == nil {
		return "a value"
	}
	if c, ok := n["const"]; ok {
		return fmt.Sprintf("the integer %v", c)
	}
	if e, ok := n["enum"].([]any); ok && len(e) > 0 {
		var vs []string
		for _, x := range e {
			vs = append(vs, fmt.Sprint(x))
		}
		return "the integer " + strings.Join(vs, " or ")
	}
	types := []string{}
	switch t := n["type"].(type) {
	case string:
		types = append(types, t)
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				types = append(types, s)
			}
		}
	}
	nullable := slices.Contains(types, "null")
	main := ""
	for _, t := range types {
		if t != "null" {
			main = t
		}
	}
	lo, hasLo := ratOf(n["minimum"])
	hi, hasHi := ratOf(n["maximum"])
	_, positive := ratOf(n["exclusiveMinimum"])
	var w string
	switch main {
	case "number", "integer":
		noun := "a number"
		if main == "integer" {
			noun = "an integer"
		}
		switch {
		case hasLo && hasHi:
			w = fmt.Sprintf("%s in [%s,%s]", noun, lo, hi)
		case hasLo:
			w = fmt.Sprintf("%s >= %s", noun, lo)
		case positive:
			w = fmt.Sprintf("a positive %s", strings.TrimPrefix(strings.TrimPrefix(noun, "an "), "a "))
		case hasHi:
			w = fmt.Sprintf("%s in [0,%s], or negative for unknown", noun, hi)
		default:
			w = "a finite " + strings.TrimPrefix(strings.TrimPrefix(noun, "an "), "a ")
		}
	case "string":
		w = "a non-empty string"
		if _, ok := n["minLength"]; !ok {
			w = "a string"
		}
	case "array":
		w = "a list"
		if min, ok := ratOf(n["minItems"]); ok && min != "0" {
			w = "a non-empty list"
		}
	case "object":
		w = "an object"
	default:
		w = "a value"
	}
	if nullable {
		w += " (or null)"
	}
	return w
}

func ratOf(v any) (string, bool) {
	switch x := v.(type) {
	case json.Number:
		return x.String(), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	}
	return "", false
}

// schemaNode is the schema object at a location "<$id>#/pointer",
// following $ref.
func schemaNode(url string) map[string]any {
	_, frag, _ := strings.Cut(url, "#")
	n := pointer(schemaDoc, frag)
	for range 8 {
		m, ok := n.(map[string]any)
		if !ok {
			return nil
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		n = pointer(schemaDoc, strings.TrimPrefix(ref, "#"))
	}
	return nil
}

// property is the schema of an object's property, $ref followed.
func property(n map[string]any, name string) map[string]any {
	props, _ := n["properties"].(map[string]any)
	p, _ := props[name].(map[string]any)
	if ref, ok := p["$ref"].(string); ok {
		m, _ := pointer(schemaDoc, strings.TrimPrefix(ref, "#")).(map[string]any)
		return m
	}
	return p
}

// propertyNames lists an object schema's properties in the order the
// schema declares them (a decoded map has none).
func propertyNames(url string) []string {
	_, frag, _ := strings.Cut(url, "#")
	n := pointer(schemaDoc, frag)
	for range 8 { // the object itself, or what its $ref names
		m, _ := n.(map[string]any)
		ref, ok := m["$ref"].(string)
		if !ok {
			break
		}
		frag = strings.TrimPrefix(ref, "#")
		n = pointer(schemaDoc, frag)
	}
	return keyOrder[frag+"/properties"]
}

// keyOrder holds, for every object of the schema, its keys in the order
// written, by JSON pointer.
var keyOrder = func() map[string][]string {
	out := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(schemaJSON))
	var walk func(ptr string) error
	walk = func(ptr string) error {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'):
			var keys []string
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := k.(string)
				keys = append(keys, key)
				esc := strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
				if err := walk(ptr + "/" + esc); err != nil {
					return err
				}
			}
			out[ptr] = keys
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := walk(ptr + "/" + strconv.Itoa(i)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := walk(""); err != nil {
		panic(fmt.Sprintf("exec: the embedded schema: %v", err))
	}
	return out
}()

// schemaRank places an instance location in the schema's own order: fields
// as the schema declares them, list entries by index.
func schemaRank(loc []string) []int {
	cur := "/$defs/observation"
	var rank []int
	for _, seg := range loc {
		node, _ := pointer(schemaDoc, cur).(map[string]any)
		for range 8 {
			ref, ok := node["$ref"].(string)
			if !ok {
				break
			}
			cur = strings.TrimPrefix(ref, "#")
			node, _ = pointer(schemaDoc, cur).(map[string]any)
		}
		switch {
		case node["properties"] != nil && slices.Contains(keyOrder[cur+"/properties"], seg):
			rank = append(rank, slices.Index(keyOrder[cur+"/properties"], seg))
			cur += "/properties/" + seg
		case node["items"] != nil:
			i, _ := strconv.Atoi(seg)
			rank = append(rank, i)
			cur += "/items"
		default:
			rank = append(rank, len(keyOrder[cur+"/properties"])) // unknown fields after the known
			cur += "/additionalProperties"
		}
	}
	return rank
}

func splitPointer(p string) []string {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return nil
	}
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts
}

// pointer follows a JSON pointer into a decoded document.
func pointer(doc any, p string) any {
	n := doc
	for _, s := range splitPointer(p) {
		switch x := n.(type) {
		case map[string]any:
			n = x[s]
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			n = x[i]
		default:
			return nil
		}
	}
	return n
}

// valueAt is the instance's value at a location.
func valueAt(root any, loc []string) any {
	n := root
	for _, s := range loc {
		switch x := n.(type) {
		case map[string]any:
			n = x[s]
		case []any:
			i, _ := strconv.Atoi(s)
			if i < 0 || i >= len(x) {
				return nil
			}
			n = x[i]
		default:
			return nil
		}
	}
	return n
}

// fieldPath names a location as the messages do: observation.servers[2].cpu.
// A key that a plain name cannot show (a newline, a quote) is quoted, so
// every problem stays on one line.
func fieldPath(loc []string) string {
	var b strings.Builder
	b.WriteString("observation")
	for i, s := range loc {
		if _, err := strconv.Atoi(s); err == nil && i > 0 {
			b.WriteString("[" + s + "]")
			continue
		}
		b.WriteString("." + oneline.Quote(s))
	}
	return b.String()
}

// outOfRange finds numbers JSON allows and float64 cannot hold (1e400).
func outOfRange(v any, loc []string, out *[]string) {
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err != nil || math.IsInf(f, 0) {
			*out = append(*out, fmt.Sprintf("%s: want a finite number, got %s (out of range)", fieldPath(loc), x))
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			outOfRange(x[k], append(loc, k), out)
		}
	case []any:
		for i, e := range x {
			outOfRange(e, append(loc, strconv.Itoa(i)), out)
		}
	}
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
	return oneline.Shorten(string(b), 60)
}

// maxStdout bounds what is kept of a program's stdout; an observation with
// a fine histogram is tens of kilobytes.
const maxStdout = 16 << 20

// ParseObservation reads a program's stdout: exactly one JSON object, the
// observation of experiment e. The servers must be e's, each once; they are
// returned in chain order, whatever order the program wrote them in.
func ParseObservation(stdout []byte, e algorithms.Experiment) (algorithms.Observation, error) {
	o, _, err := parseResponse(stdout, e, ProtocolVersion, false)
	return o, err
}

// ParseWindow reads one window of a ramp (version 2): an observation of e,
// whose users are the level's, with its ramp field.
func ParseWindow(line []byte, e algorithms.Experiment) (algorithms.Observation, RampWindow, error) {
	o, w, err := parseResponse(line, e, RampProtocolVersion, true)
	if err != nil {
		return o, RampWindow{}, err
	}
	var c checker
	switch {
	case w.Users != e.Workload.Users:
		c.add("observation.ramp.users", "want %d, the level asked for, got %d", e.Workload.Users, w.Users)
	case w.EndSeconds <= w.StartSeconds:
		c.add("observation.ramp", "want endSeconds > startSeconds, got %g and %g", w.EndSeconds, w.StartSeconds)
	case math.Abs((w.EndSeconds-w.StartSeconds)-o.RuntimeSeconds) > 0.05*o.RuntimeSeconds+1:
		// The window's edges and its length are one measurement.
		c.add("observation.ramp", "the window from %g to %g s is not runtimeSeconds %g long", w.StartSeconds, w.EndSeconds, o.RuntimeSeconds)
	}
	if len(c.problems) > 0 {
		return algorithms.Observation{}, RampWindow{}, &InvalidObservationError{Problems: c.problems}
	}
	return o, *w, nil
}

// parseResponse reads an observation of e in protocol version, a ramp's
// window (with its ramp field) or a trial's (without).
func parseResponse(stdout []byte, e algorithms.Experiment, version int, ramp bool) (algorithms.Observation, *RampWindow, error) {
	o, w, err := parseResponseBody(stdout, e, version)
	if err != nil {
		return o, nil, err
	}
	switch {
	case ramp && w == nil:
		return algorithms.Observation{}, nil, &InvalidObservationError{Problems: []string{
			"observation.ramp: missing; want the window's place in the ramp ({\"users\", \"startSeconds\", \"endSeconds\"}): this experiment is a ramp"}}
	case !ramp && w != nil:
		return algorithms.Observation{}, nil, &InvalidObservationError{Problems: []string{
			"observation.ramp: want it only in a ramp's windows; this experiment is one trial"}}
	}
	return o, w, nil
}

func parseResponseBody(stdout []byte, e algorithms.Experiment, version int) (algorithms.Observation, *RampWindow, error) {
	text := bytes.TrimSpace(stdout)
	if len(text) == 0 {
		return algorithms.Observation{}, nil, errors.New("no observation on stdout: the program must print one JSON object there (diagnostics go to stderr)")
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		// Show where it broke (a NaN deep in the object), not only the start.
		var se *json.SyntaxError
		if errors.As(err, &se) && se.Offset > 120 {
			from := max(0, int(se.Offset)-60)
			return algorithms.Observation{}, nil, fmt.Errorf("stdout is not a JSON observation: %v at byte %d, in %q", err, se.Offset,
				oneline.Shorten(string(text[from:]), 80))
		}
		return algorithms.Observation{}, nil, fmt.Errorf("stdout is not a JSON observation: %v; stdout began %q", err, oneline.Shorten(string(text), 120))
	}
	first := dec.InputOffset() // Token below consumes the next value's first byte
	if _, err := dec.Token(); err != io.EOF {
		return algorithms.Observation{}, nil, fmt.Errorf("stdout holds more than one JSON value (print diagnostics to stderr); after the first came %q",
			oneline.Shorten(string(bytes.TrimSpace(text[first:])), 120))
	}
	problems := schemaProblems(v)
	outOfRange(v, nil, &problems)
	if len(problems) > 0 {
		return algorithms.Observation{}, nil, &InvalidObservationError{Problems: problems}
	}
	var r Response
	if err := json.Unmarshal(text, &r); err != nil {
		// The shape check admits integers of any size; one beyond 64 bits
		// does not decode.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// Field holds the Go field's name where it leads the path.
			field := "observation." + strings.TrimPrefix(strings.TrimPrefix(te.Field, "Observation."), "observation.")
			return algorithms.Observation{}, nil, &InvalidObservationError{Problems: []string{fmt.Sprintf("%s: want an integer of at most 64 bits, got %s",
				field, strings.TrimPrefix(te.Value, "number "))}}
		}
		return algorithms.Observation{}, nil, fmt.Errorf("decode observation: %w", err)
	}
	if r.ProtocolVersion != version {
		return algorithms.Observation{}, nil, &InvalidObservationError{Problems: []string{
			fmt.Sprintf("observation.protocolVersion: want %d, the experiment's, got %d", version, r.ProtocolVersion)}}
	}
	o, err := r.Observation.Algorithms()
	if err != nil {
		// Every range problem at once, as the shape check gives every type problem.
		return algorithms.Observation{}, nil, &InvalidObservationError{Problems: o.Problems()}
	}
	if o, err = matchServers(o, e); err != nil {
		return o, nil, err
	}
	// A trial's pages have response times: an empty histogram beside a
	// throughput would read as goodput 0 at every threshold. (Problems lets
	// it through for the windows Advise reads, which have none.)
	if n := o.Pages(); o.ResponseTimes.Count() == 0 && n >= 1 {
		return algorithms.Observation{}, nil, &InvalidObservationError{Problems: []string{fmt.Sprintf(
			"observation.responseTimes: no pages in the buckets, but throughput %g pages/s over runtimeSeconds %g is %.6g pages; want the response times of the window's pages",
			o.Throughput, o.RuntimeSeconds, n)}}
	}
	if err := checkGoodput(o, e); err != nil {
		return algorithms.Observation{}, nil, err
	}
	return o, r.Ramp, checkWindow(o, e)
}

// checkGoodput holds goodput to the SLA thresholds the request sent (an
// adaptive trial's timing.slas; a fixed trial is sent none): goodput at a
// threshold nobody asked for is a program answering another experiment, or
// one that mislabels its figures (issue 35).
func checkGoodput(o algorithms.Observation, e algorithms.Experiment) error {
	asked := wire.FromTiming(e.Timing).SLAs
	want := fmt.Sprintf("want goodput at timing.slas %v only", asked)
	if len(asked) == 0 {
		want = "want no goodput (the request sent no timing.slas)"
	}
	var c checker
	for i, g := range o.GoodputIntervals {
		// The program echoes the thresholds it was sent; a rounding's
		// worth of slack for one that prints them to 6 digits.
		if !slices.ContainsFunc(asked, func(s float64) bool { return math.Abs(s-g.SLA) <= 1e-6*s }) {
			c.add(fmt.Sprintf("observation.goodput[%d].sla", i), "goodput at %g s, a threshold the experiment did not ask for; %s", g.SLA, want)
		}
	}
	if len(c.problems) > 0 {
		return &InvalidObservationError{Problems: c.problems}
	}
	return nil
}

// checkWindow holds an adaptive trial's window to what it claims: the
// precision the experiment asked, and, when precise, half-widths within it
// by the rule softalloc's own runners stop on (algorithms.Stopping.
// Estimate). A program that claimed 2% over a ±50% interval once had
// find-critical read "throughput stopped growing" from noise.
func checkWindow(o algorithms.Observation, e algorithms.Experiment) error {
	w := o.Window
	if w == nil || w.Precision == 0 {
		return nil // a fixed trial: a program may ignore the precision asked
	}
	p := e.Timing.Precision
	if w.Precision != p {
		return &InvalidObservationError{Problems: []string{fmt.Sprintf(
			"observation.window.precision: want the experiment's timing.precision %g (or no window, for a trial that ignored it), got %g", p, w.Precision)}}
	}
	if !w.Precise {
		return nil
	}
	var c checker
	within := func(path string, halfWidth, mean, whole float64) {
		// A rounding's worth of slack: a program may print 6 digits.
		if allow := p * max(math.Abs(mean), whole); halfWidth > allow*(1+1e-6)+1e-12 {
			c.add(path, "%g is wider than the precision %g allows (%g) while window.precise is true", halfWidth, p, allow)
		}
	}
	within("observation.throughputHalfWidth", o.ThroughputHalfWidth, o.Throughput, 0)
	for i, g := range o.GoodputIntervals {
		within(fmt.Sprintf("observation.goodput[%d].halfWidth", i), g.HalfWidth, g.Goodput, o.Throughput)
	}
	if !e.Timing.GoodputOnly {
		for i, s := range o.Servers {
			within(fmt.Sprintf("observation.servers[%d].cpuHalfWidth", i), s.CPUHalfWidth, s.CPU, 1)
			for j, pl := range s.Pools {
				// Only the pools under test hold a trial (Stopping.holds).
				if e.Allocation[s.Tier].Size(pl.Name) > 0 {
					within(fmt.Sprintf("observation.servers[%d].pools[%d].busyHalfWidth", i, j), pl.BusyHalfWidth, pl.Busy, float64(pl.Size))
				}
			}
		}
	}
	if len(c.problems) > 0 {
		return &InvalidObservationError{Problems: c.problems}
	}
	return nil
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
