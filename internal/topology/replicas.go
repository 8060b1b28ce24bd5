package topology

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
)

// MaxConnectionLimit bounds a database's connection limit: PostgreSQL's
// largest max_connections (MariaDB's is 100,000).
const MaxConnectionLimit = 262143

// PgBouncer's names for a pooler tier's pools in a deployment file.
const (
	// PoolDefaultPoolSize is the pooler's server connections per
	// database and user: the model's connections pool, the jobs the
	// database sees.
	PoolDefaultPoolSize = "default_pool_size"
	// PoolMaxClientConn is the client connections it admits: a limit the
	// replicas in front must fit, not a pool of jobs.
	PoolMaxClientConn = "max_client_conn"
	// PoolReservePoolSize is the server connections a pool adds when a
	// client has waited reserve_pool_timeout: the database sees them
	// beside default_pool_size, so its budget counts them; not a pool
	// softalloc sizes.
	PoolReservePoolSize = "reserve_pool_size"
)

const replicasForms = "a positive integer or a range min..max (e.g. 2..12)"

var replicaRange = regexp.MustCompile(`^\s*([0-9]+)\s*\.\.\s*([0-9]+)\s*$`)

// ParseReplicas reads a replica count ("4") or range ("2..12"): the count
// experiments run at (a range's lower end) and the range (nil for a count).
// The error is the tail of a message naming the value.
func ParseReplicas(s string) (int, *algorithms.Scaling, error) {
	m := replicaRange.FindStringSubmatch(s)
	if m == nil {
		n, msg := parseCount(strings.TrimSpace(s), MaxReplicas)
		if msg != "" {
			return 0, nil, fmt.Errorf("want %s, got %q", replicasForms, s)
		}
		return n, nil, nil
	}
	var ends [2]int
	for i, e := range m[1:] {
		n, msg := parseCount(e, MaxReplicas)
		if msg != "" {
			return 0, nil, fmt.Errorf("range %q: %s %s %s (want at least 1 replica)", s, []string{"lower end", "upper end"}[i], e, msg)
		}
		ends[i] = n
	}
	if ends[0] > ends[1] {
		return 0, nil, fmt.Errorf("range %q: the lower end %d is above the upper end %d; want min..max, e.g. %d..%d", s, ends[0], ends[1], ends[1], ends[0])
	}
	return ends[0], &algorithms.Scaling{Min: ends[0], Max: ends[1]}, nil
}

// readReplicas reads a tier's replicas: an integer, or a range as text.
func readReplicas(n *yaml.Node) (int, *algorithms.Scaling, error) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		return ParseReplicas(n.Value)
	}
	v, err := readInt(n, MaxReplicas)
	return v, nil, err
}

const surgeForms = "a count of pods (e.g. 2) or a percentage of the replicas up to 100% (e.g. 25%), as Kubernetes' maxSurge"

// ParseSurge reads a rollout surge: "25%" or "2" (0 is none).
func ParseSurge(s string) (algorithms.Surge, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	t = strings.TrimSpace(strings.TrimSuffix(t, "%"))
	n, msg := parseCount(t, MaxReplicas)
	if t == "0" {
		n, msg = 0, ""
	}
	switch {
	case msg != "":
		return algorithms.Surge{}, fmt.Errorf("want %s, got %q", surgeForms, s)
	case pct && n > 100:
		return algorithms.Surge{}, fmt.Errorf("want %s, got %q: softalloc takes at most 100%% (every replica doubled during a rollout)", surgeForms, s)
	case pct:
		return algorithms.Surge{Percent: n}, nil
	}
	return algorithms.Surge{Count: n}, nil
}

func readSurge(n *yaml.Node) (algorithms.Surge, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!str") {
		return algorithms.Surge{}, fmt.Errorf("want %s, got %s", surgeForms, describe(n))
	}
	return ParseSurge(n.Value)
}

// readConnectionLimit reads a db tier's connectionLimit: max_connections
// alone (500), or {max: 500, reserved: {admin: 3, monitoring: 5}}, the
// reserved connections by name so that the answer can say whose they are.
func readConnectionLimit(n *yaml.Node) (*algorithms.ConnectionLimit, error) {
	n = resolve(n)
	const forms = "max_connections as a number (e.g. 500), or a mapping {max: 500, reserved: {admin: 3, monitoring: 5}}"
	if n.Kind == yaml.ScalarNode {
		v, err := readInt(n, MaxConnectionLimit)
		if err != nil {
			return nil, fmt.Errorf("want %s: %v", forms, err)
		}
		return &algorithms.ConnectionLimit{Max: v, Reserved: []algorithms.Reservation{}}, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("want %s, got %s", forms, describe(n))
	}
	cl := &algorithms.ConnectionLimit{Reserved: []algorithms.Reservation{}}
	var res *yaml.Node
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := resolve(n.Content[j]), n.Content[j+1]
		switch {
		case k.Kind == yaml.ScalarNode && k.Value == "max" && cl.Max == 0:
			m, err := readInt(v, MaxConnectionLimit)
			if err != nil {
				return nil, fmt.Errorf("max: %v", err)
			}
			cl.Max = m
		case k.Kind == yaml.ScalarNode && k.Value == "reserved" && res == nil:
			res = resolve(v)
		case k.Kind == yaml.ScalarNode && (k.Value == "max" || k.Value == "reserved"):
			return nil, fmt.Errorf("%s given twice", k.Value)
		default:
			return nil, fmt.Errorf("unknown key %s; want max or reserved", describe(k))
		}
	}
	if cl.Max == 0 {
		return nil, fmt.Errorf("max: missing; want the database's max_connections")
	}
	if res != nil && !isNull(res) {
		if res.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("reserved: want a mapping of names to connections (e.g. {admin: 3, reports-service: 40}), got %s", describe(res))
		}
		seen := map[string]bool{}
		for j := 0; j+1 < len(res.Content); j += 2 {
			k := resolve(res.Content[j])
			if k.Kind != yaml.ScalarNode || !validName.MatchString(k.Value) || len(k.Value) > 64 {
				return nil, fmt.Errorf("reserved: want names of letters, digits, '-', '_' or '.', got %s", describe(k))
			}
			if seen[k.Value] {
				return nil, fmt.Errorf("reserved: %s given twice", k.Value)
			}
			seen[k.Value] = true
			c, err := readInt(res.Content[j+1], MaxConnectionLimit)
			if err != nil {
				return nil, fmt.Errorf("reserved: %s: %v", k.Value, err)
			}
			cl.Reserved = append(cl.Reserved, algorithms.Reservation{Name: k.Value, Connections: c})
		}
	}
	if r := cl.ReservedTotal(); r >= cl.Max {
		parts := make([]string, len(cl.Reserved))
		for i, x := range cl.Reserved {
			parts[i] = fmt.Sprintf("%s %d", x.Name, x.Connections)
		}
		return nil, fmt.Errorf("reserved adds up to %d (%s), which leaves nothing of max %d for the deployment's pools",
			r, strings.Join(parts, ", "), cl.Max)
	}
	return cl, nil
}

// poolerPools reads a pooler tier's pools by PgBouncer's names.
func (p *parser) poolerPools(t algorithms.Tier, pn *yaml.Node, fail func(string, ...any) error) (algorithms.Tier, algorithms.TierPools, error) {
	var pools algorithms.TierPools
	seen := map[string]bool{}
	for j := 0; j+1 < len(pn.Content); j += 2 {
		k, v := resolve(pn.Content[j]), pn.Content[j+1]
		if k.Kind != yaml.ScalarNode || (k.Value != PoolDefaultPoolSize && k.Value != PoolMaxClientConn && k.Value != PoolReservePoolSize) {
			return t, pools, fail("pools: a pooler's pools are %s (its server connections: what the database sees), %s (the server connections it adds when clients wait, which the database sees too) and %s (the client connections it admits), got %s",
				PoolDefaultPoolSize, PoolReservePoolSize, PoolMaxClientConn, describe(k))
		}
		if seen[k.Value] {
			return t, pools, fail("pools: %s given twice", k.Value)
		}
		seen[k.Value] = true
		if k.Value == PoolReservePoolSize {
			// 0 is PgBouncer's default: no reserve.
			n, err := readCount(v, MaxPoolSize)
			if err != nil {
				return t, pools, fail("pools: %s: %v", k.Value, err)
			}
			t.ReservePoolSize = n
			continue
		}
		n, err := readInt(v, MaxPoolSize)
		if err != nil {
			return t, pools, fail("pools: %s: %v", k.Value, err)
		}
		if k.Value == PoolDefaultPoolSize {
			pools.Connections = n
		} else {
			t.MaxClientConn = n
		}
	}
	if pools.Connections != 0 {
		t.Pools = []string{algorithms.PoolConnections}
	}
	return t, pools, nil
}

// readCount reads an integer in 0..limit.
func readCount(n *yaml.Node, limit int) (int, error) {
	n = resolve(n)
	var v int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil || v < 0 {
		return 0, fmt.Errorf("want a count of connections, 0 or more, got %s", describe(n))
	}
	if v > int64(limit) {
		return 0, fmt.Errorf("want at most %d, got %s", limit, describe(n))
	}
	return int(v), nil
}

// checkReplicas checks what concerns several tiers: one tier's count
// varies (the answer is a table over it), and a pooler stands in front of
// a database.
func (p *parser) checkReplicas(d algorithms.Deployment) error {
	ranged := -1
	for i, t := range d.Tiers {
		if t.Scaling != nil && t.Scaling.Min < t.Scaling.Max {
			if ranged >= 0 {
				return p.fail(nil, "%s: replicas: %s has a range already (%d..%d); softalloc answers for one autoscaled tier at a time: give the others a count",
					p.tierLabel(i), p.tierLabel(ranged), d.Tiers[ranged].Scaling.Min, d.Tiers[ranged].Scaling.Max)
			}
			ranged = i
		}
		if t.Role != algorithms.RolePooler {
			continue
		}
		switch {
		case i+1 == len(d.Tiers):
			return p.fail(nil, "%s: role: a pooler stands in front of a database, and %q is the last tier", p.tierLabel(i), t.Name)
		case d.Tiers[i+1].Role != algorithms.RoleDB:
			return p.fail(nil, "%s: role: a pooler stands in front of a database, and the next tier %q is of role %s; want db",
				p.tierLabel(i), d.Tiers[i+1].Name, d.Tiers[i+1].Role)
		case i > 0 && d.Tiers[i-1].Role == algorithms.RolePooler:
			return p.fail(nil, "%s: role: two poolers in a row; want one in front of the database", p.tierLabel(i))
		}
	}
	return nil
}

// FormatReplicas writes a tier's replicas as a deployment file does: "4"
// or "2..12".
func FormatReplicas(t algorithms.Tier) string {
	if s := t.Scaling; s != nil && s.Min < s.Max {
		return strconv.Itoa(s.Min) + ".." + strconv.Itoa(s.Max)
	}
	return strconv.Itoa(t.Replicas)
}
