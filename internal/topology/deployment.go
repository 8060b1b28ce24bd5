package topology

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
)

// DeploymentFile is a deployment file as read: a chain of tiers, the pool
// sizes it gives as defaults, and settings for the runner.
type DeploymentFile struct {
	// Name is the file's name field; it may be empty when the tiers are those
	// of the topology notation.
	Name string
	// Deployment's Topology is the notation ("1/4/1/4") when the tiers are
	// exactly what ParseTopology gives for it, so a file and the flag name the
	// same experiments; otherwise it is Name.
	Deployment algorithms.Deployment
	// Allocation holds the pool sizes the file gives, keyed by tier; tiers
	// without pools have no entry.
	Allocation algorithms.Allocation
	// Runner is the runner section as written (nil when absent). Its meaning
	// belongs to the runner, so it is kept opaque here.
	Runner map[string]any
}

// maxFileSize bounds what LoadDeployment reads: a deployment file is a few
// lines, and a limit keeps a wrong path (a device, a log) from being read whole.
const maxFileSize = 1 << 20

// LoadDeployment reads and checks the deployment file at path (YAML, or JSON
// with the same keys).
func LoadDeployment(path string) (DeploymentFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return DeploymentFile{}, fmt.Errorf("load deployment %q: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return DeploymentFile{}, fmt.Errorf("load deployment %q: %w", path, err)
	}
	if len(data) > maxFileSize {
		return DeploymentFile{}, &Error{Kind: "deployment", Value: path,
			Msg: fmt.Sprintf("file is larger than %d bytes; a deployment file is a few lines", maxFileSize)}
	}
	return ParseDeployment(data, path)
}

// The document as decoded. Values are kept as nodes and read by hand so that
// a wrong value gets an error naming its tier and field, which yaml's own
// type errors ("line 3: cannot unmarshal !!str") do not; the struct still
// lets KnownFields reject unknown keys.
type fileDoc struct {
	Name   yaml.Node  `yaml:"name"`
	Tiers  []fileTier `yaml:"tiers"`
	Runner yaml.Node  `yaml:"runner"`
}

type fileTier struct {
	Name            yaml.Node `yaml:"name"`
	Role            yaml.Node `yaml:"role"`
	Replicas        yaml.Node `yaml:"replicas"`
	Surge           yaml.Node `yaml:"surge"`
	Cores           yaml.Node `yaml:"cores"`
	Pools           yaml.Node `yaml:"pools"`
	Software        yaml.Node `yaml:"software"`
	ConnectionLimit yaml.Node `yaml:"connectionLimit"`
}

const (
	docFields  = "name, tiers or runner"
	tierFields = "name, role, replicas, surge, cores, software, pools or connectionLimit"
	roles      = "web, app, cluster, db or pooler"
)

// ParseDeployment reads a deployment file's contents; name is the file's
// name for error messages.
func ParseDeployment(data []byte, name string) (DeploymentFile, error) {
	p := parser{file: name}
	return p.parse(data)
}

type parser struct {
	file  string
	items []*yaml.Node // the tiers list, for placing yaml's errors by line
}

func (p *parser) fail(err error, format string, args ...any) error {
	return &Error{Kind: "deployment", Value: p.file, Msg: fmt.Sprintf(format, args...), Err: err}
}

func (p *parser) parse(data []byte) (DeploymentFile, error) {
	// First the bare node tree: syntax errors, and the shape yaml would
	// otherwise report in terms of Go types.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return DeploymentFile{}, p.fail(err, "cannot parse")
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return DeploymentFile{}, p.fail(nil, "empty; want a mapping with tiers (and optionally name and runner)")
	}
	// yaml bounds how many aliases a document holds against its other
	// nodes, not what they expand to: 5,000 aliases of a 300 KB string
	// diluted by a few hundred plain ones are 1.5 GB of runner section,
	// which the runner writes out again. The expansion is bounded as the file.
	if expandedSize(&root, maxFileSize, map[*yaml.Node]int{}) > maxFileSize {
		return DeploymentFile{}, p.fail(nil, "its aliases expanded, the document is larger than %d bytes (the cap on a deployment file); repeat the text rather than alias it", maxFileSize)
	}
	top := resolve(root.Content[0])
	if top.Kind != yaml.MappingNode {
		return DeploymentFile{}, p.fail(nil, "want a mapping with tiers (and optionally name and runner), got %s", describe(top))
	}
	if tiers := lookup(top, "tiers"); tiers != nil && !isNull(tiers) {
		if tiers.Kind != yaml.SequenceNode {
			return DeploymentFile{}, p.fail(nil, "tiers: want a list of tiers, got %s", describe(tiers))
		}
		for i, it := range tiers.Content {
			it = resolve(it)
			if it.Kind != yaml.MappingNode {
				return DeploymentFile{}, p.fail(nil, "tiers[%d]: want a mapping of %s, got %s", i, tierFields, describe(it))
			}
			p.items = append(p.items, it)
		}
	}

	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var doc fileDoc
	if err := dec.Decode(&doc); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			return DeploymentFile{}, p.fail(nil, "%s", p.explain(te.Errors[0]))
		}
		return DeploymentFile{}, p.fail(err, "cannot parse")
	}
	// A second document would be silently ignored; a trailing "---" is harmless.
	for {
		var more yaml.Node
		err := dec.Decode(&more)
		if err == io.EOF {
			break
		}
		if err != nil {
			return DeploymentFile{}, p.fail(err, "cannot parse")
		}
		if !isAbsent(&more) {
			return DeploymentFile{}, p.fail(nil, "want one YAML document, found more")
		}
	}

	df := DeploymentFile{Allocation: algorithms.Allocation{}}
	if !isAbsent(&doc.Name) {
		n, err := p.name(&doc.Name, "name")
		if err != nil {
			return DeploymentFile{}, err
		}
		df.Name = n
	}
	if len(doc.Tiers) == 0 {
		return DeploymentFile{}, p.fail(nil, "tiers: want at least one tier")
	}
	seen := map[string]int{}
	for i := range doc.Tiers {
		t, pools, err := p.tier(i, &doc.Tiers[i], seen)
		if err != nil {
			return DeploymentFile{}, err
		}
		df.Deployment.Tiers = append(df.Deployment.Tiers, t)
		if len(t.Pools) > 0 {
			df.Allocation[t.Name] = pools
		}
	}
	if err := p.checkReplicas(df.Deployment); err != nil {
		return DeploymentFile{}, err
	}
	if last := df.Deployment.Tiers[len(df.Deployment.Tiers)-1]; last.Children {
		return DeploymentFile{}, p.fail(nil, "%s: pools: children open connections to the next tier, and %q is the last; give it threads",
			p.tierLabel(len(df.Deployment.Tiers)-1), last.Name)
	}
	df.Deployment.Topology = FormatTopology(df.Deployment)
	if df.Deployment.Topology == "" {
		if df.Name == "" {
			return DeploymentFile{}, p.fail(nil,
				"name: missing; a deployment needs one unless its tiers are exactly those of %s",
				strings.TrimPrefix(topologyForms, "want "))
		}
		df.Deployment.Topology = df.Name
	}
	if !isAbsent(&doc.Runner) {
		r := resolve(&doc.Runner)
		if r.Kind != yaml.MappingNode {
			return DeploymentFile{}, p.fail(nil, "runner: want a mapping, got %s", describe(r))
		}
		if err := r.Decode(&df.Runner); err != nil {
			return DeploymentFile{}, p.fail(nil, "runner: %s", yamlMessage(err))
		}
	}
	return df, nil
}

func (p *parser) tier(i int, ft *fileTier, seen map[string]int) (algorithms.Tier, algorithms.TierPools, error) {
	var t algorithms.Tier
	var pools algorithms.TierPools
	label := fmt.Sprintf("tiers[%d]", i)
	if n := resolve(&ft.Name); n.Kind == yaml.ScalarNode && !isNull(n) {
		label += fmt.Sprintf(" (%q)", n.Value)
	}
	fail := func(format string, args ...any) error {
		return p.fail(nil, "%s: %s", label, fmt.Sprintf(format, args...))
	}

	if isAbsent(&ft.Name) {
		return t, pools, fail("name: missing")
	}
	name, err := p.name(&ft.Name, label+": name")
	if err != nil {
		return t, pools, err
	}
	if j, ok := seen[name]; ok {
		return t, pools, fail("name: tiers[%d] is already named %q", j, name)
	}
	seen[name] = i
	t.Name = name

	role := resolve(&ft.Role)
	if isAbsent(role) {
		return t, pools, fail("role: missing; want %s", roles)
	}
	switch v := role.Value; {
	case role.Kind == yaml.ScalarNode && (v == algorithms.RoleWeb || v == algorithms.RoleApp ||
		v == algorithms.RoleCluster || v == algorithms.RoleDB || v == algorithms.RolePooler):
		t.Role = v
	default:
		return t, pools, fail("role: want %s, got %s", roles, describe(role))
	}

	if isAbsent(&ft.Replicas) {
		return t, pools, fail("replicas: missing; want a positive integer")
	}
	if t.Replicas, t.Scaling, err = readReplicas(&ft.Replicas); err != nil {
		return t, pools, fail("replicas: %v", err)
	}
	if !isAbsent(&ft.Surge) {
		surge, err := readSurge(&ft.Surge)
		if err != nil {
			return t, pools, fail("surge: %v", err)
		}
		if t.Scaling == nil {
			t.Scaling = &algorithms.Scaling{Min: t.Replicas, Max: t.Replicas}
		}
		t.Scaling.Surge = surge
	}
	if !isAbsent(&ft.ConnectionLimit) {
		if t.Role != algorithms.RoleDB {
			return t, pools, fail("connectionLimit: the database's limit belongs on its tier (role db), not on a tier of role %s", t.Role)
		}
		if t.ConnectionLimit, err = readConnectionLimit(&ft.ConnectionLimit); err != nil {
			return t, pools, fail("connectionLimit: %v", err)
		}
	}
	t.Cores = 1 // the notation's servers have one core, and so do a file's unless it says
	if !isAbsent(&ft.Cores) {
		if t.Cores, err = readInt(&ft.Cores, MaxCores); err != nil {
			return t, pools, fail("cores: %v", err)
		}
	}

	if !isAbsent(&ft.Software) {
		sw := resolve(&ft.Software)
		if sw.Kind != yaml.ScalarNode || !slices.Contains(algorithms.KnownSoftware, sw.Value) {
			return t, pools, fail("software: want %s, got %s", orList(algorithms.KnownSoftware), describe(sw))
		}
		t.Software = sw.Value
	}

	if isAbsent(&ft.Pools) {
		return t, pools, nil
	}
	pn := resolve(&ft.Pools)
	if pn.Kind != yaml.MappingNode {
		return t, pools, fail("pools: want a mapping of %s, %s or %s to sizes, got %s",
			algorithms.PoolThreads, algorithms.PoolConnections, algorithms.PoolChildren, describe(pn))
	}
	if t.Role == algorithms.RolePooler {
		return p.poolerPools(t, pn, fail)
	}
	mixed := func(other string) error {
		return fail("pools: children are the tier's workers and its connections both; give children alone, not with %s", other)
	}
	for j := 0; j+1 < len(pn.Content); j += 2 {
		k, v := resolve(pn.Content[j]), pn.Content[j+1]
		if k.Kind == yaml.ScalarNode && k.Value == algorithms.PoolPermits {
			if err := permitsPool(&t, &pools, v, fail); err != nil {
				return t, pools, err
			}
			continue
		}
		if k.Kind == yaml.ScalarNode && k.Value == algorithms.PoolChildren {
			// The children are the tier's workers, and each opens its own
			// connections: the model keeps them as its threads.
			if t.Children {
				return t, pools, fail("pools: children given twice")
			}
			if t.Permits {
				return t, pools, mixed(algorithms.PoolPermits)
			}
			for _, other := range []string{algorithms.PoolThreads, algorithms.PoolConnections} {
				if pools.Size(other) != 0 {
					return t, pools, mixed(other)
				}
			}
			n, err := readInt(v, MaxPoolSize)
			if err != nil {
				return t, pools, fail("pools: children: %v", err)
			}
			t.Children, pools.Threads = true, n
			continue
		}
		if k.Kind != yaml.ScalarNode || (k.Value != algorithms.PoolThreads && k.Value != algorithms.PoolConnections) {
			return t, pools, fail("pools: unknown pool %s; want %s, %s, %s or %s",
				describe(k), algorithms.PoolThreads, algorithms.PoolConnections, algorithms.PoolChildren, algorithms.PoolPermits)
		}
		if t.Children {
			return t, pools, mixed(k.Value)
		}
		if t.Permits && k.Value == algorithms.PoolThreads {
			return t, pools, fail("%s", permitsAndThreads)
		}
		if pools.Size(k.Value) != 0 {
			return t, pools, fail("pools: %s given twice", k.Value)
		}
		n, err := readInt(v, MaxPoolSize)
		if err != nil {
			return t, pools, fail("pools: %s: %v", k.Value, err)
		}
		if k.Value == algorithms.PoolThreads {
			pools.Threads = n
		} else {
			pools.Connections = n
		}
	}
	if !t.Children && t.Software == algorithms.SoftwarePHPFPM && pools.Threads != 0 {
		// Sized as threads, the DB's connections would be taken as a pool
		// the tier does not have (issue 36: max_connections of 10-12 for
		// 150-200 children).
		return t, pools, fail("pools: php-fpm's pool is its children, each with its own DB connections: write pools: {children: N}")
	}
	// The pools in a fixed order, as ParseTopology lists them, whatever the
	// file's order: a deployment's value must not depend on how it was written.
	for _, name := range []string{algorithms.PoolThreads, algorithms.PoolConnections} {
		if pools.Size(name) != 0 {
			t.Pools = append(t.Pools, name)
		}
	}
	return t, pools, nil
}

// orList is "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// validName allows what is safe in server names ("app-1"), allocation keys
// (which use ":;,=" as separators), file names and metric labels.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (p *parser) name(n *yaml.Node, field string) (string, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.Value == "" || !validName.MatchString(n.Value) || len(n.Value) > 64 {
		return "", p.fail(nil, "%s: want letters, digits, '-', '_' or '.' (at most 64, starting with a letter or digit), got %s",
			field, describe(n))
	}
	return n.Value, nil
}

// readInt reads a YAML integer in 1..limit; the error is the tail of a
// message, "want a positive integer, got 0".
func readInt(n *yaml.Node, limit int) (int, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, fmt.Errorf("want a positive integer, got %s", describe(n))
	}
	var v int64
	if err := n.Decode(&v); err != nil || v < 1 {
		return 0, fmt.Errorf("want a positive integer, got %s", describe(n))
	}
	if v > int64(limit) {
		return 0, fmt.Errorf("want at most %d, got %s", limit, describe(n))
	}
	return int(v), nil
}

var (
	unknownField = regexp.MustCompile(`^line (\d+): field (.*) not found in type \S+$`)
	lineMessage  = regexp.MustCompile(`^line (\d+): (.*)$`)
)

// explain turns one of yaml's type errors into a message naming the tier,
// where the error's line and key place it in one.
func (p *parser) explain(msg string) string {
	if m := unknownField.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		for i, it := range p.items {
			for j := 0; j+1 < len(it.Content); j += 2 {
				if k := it.Content[j]; k.Line == line && k.Value == m[2] {
					return fmt.Sprintf("%s: unknown field %q; want %s", p.tierLabel(i), m[2], tierFields)
				}
			}
		}
		if !strings.Contains(msg, "fileTier") {
			return fmt.Sprintf("unknown field %q; want %s", m[2], docFields)
		}
		return fmt.Sprintf("line %s: unknown field %q in a tier; want %s", m[1], m[2], tierFields)
	}
	if m := lineMessage.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		for i := len(p.items) - 1; i >= 0; i-- {
			if p.items[i].Line <= line {
				return fmt.Sprintf("%s: line %d: %s", p.tierLabel(i), line, m[2])
			}
		}
	}
	return msg
}

func (p *parser) tierLabel(i int) string {
	if n := lookup(p.items[i], "name"); n != nil && n.Kind == yaml.ScalarNode && !isNull(n) {
		return fmt.Sprintf("tiers[%d] (%q)", i, n.Value)
	}
	return fmt.Sprintf("tiers[%d]", i)
}

// yamlMessage makes a yaml error one line: TypeError lists its errors on
// lines of their own.
func yamlMessage(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return strings.Join(te.Errors, "; ")
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

// resolve follows aliases (*name) to the node they stand for. The depth
// bound is only a guard; yaml rejects alias cycles itself.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return n
}

// expandedSize is the size of n with its aliases expanded, counted as each
// scalar's bytes and a byte a node, and limit+1 past limit: each node is
// counted once (memo), so aliases of aliases (billion laughs) cost no more
// than their nodes.
func expandedSize(n *yaml.Node, limit int, memo map[*yaml.Node]int) int {
	if n == nil {
		return 0
	}
	if v, ok := memo[n]; ok {
		return v
	}
	memo[n] = limit + 1 // a cycle (which yaml refuses anyway) is past any limit
	size := 1 + len(n.Value)
	if n.Kind == yaml.AliasNode {
		size += expandedSize(n.Alias, limit, memo)
	}
	for _, c := range n.Content {
		if size > limit {
			break
		}
		size += expandedSize(c, limit, memo)
	}
	size = min(size, limit+1)
	memo[n] = size
	return size
}

func lookup(m *yaml.Node, key string) *yaml.Node {
	for j := 0; j+1 < len(m.Content); j += 2 {
		if k := resolve(m.Content[j]); k.Kind == yaml.ScalarNode && k.Value == key {
			return resolve(m.Content[j+1])
		}
	}
	return nil
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// isAbsent is true for a key not given, or given as null ("cores:" or "cores: ~").
func isAbsent(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || n.Kind == 0 || isNull(n)
}

func describe(n *yaml.Node) string {
	n = resolve(n)
	switch {
	case n == nil || n.Kind == 0:
		return "nothing"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind != yaml.ScalarNode:
		return "an alias"
	case isNull(n):
		return "null"
	}
	// Numbers and booleans as written; anything else quoted, which also
	// keeps the message on one line.
	switch q := strconv.Quote(n.Value); n.ShortTag() {
	case "!!int", "!!float", "!!bool":
		if q[1:len(q)-1] == n.Value && !strings.ContainsAny(n.Value, " \t") {
			return n.Value
		}
	}
	return strconv.Quote(n.Value)
}
