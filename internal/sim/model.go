package sim

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/duration"
	"github.com/softalloc/softalloc/internal/oneline"
	"github.com/softalloc/softalloc/internal/safefile"
)

// Model holds every parameter of the simulated n-tier chain. DefaultModel is
// the paper's RUBBoS testbed; LoadModel reads a user's own. Times are seconds
// (duration.Seconds) and are written in YAML as "2.4673ms", "7s" or plain
// seconds.
type Model struct {
	// Name labels the model in messages.
	Name string `yaml:"name"`
	// WarmUp is the simulated time before measurement that DefaultTiming
	// proposes (an experiment's RampUp overrides it).
	WarmUp duration.Seconds `yaml:"warmUp"`
	// MixFile is the workload mix file, relative to the model file; empty
	// means the embedded RUBBoS browse-only mix.
	MixFile string `yaml:"mix"`
	// Mix is the workload mix, loaded from MixFile. Read-only once loaded.
	Mix *Mix `yaml:"-"`
	// Cores is the number of CPU cores per server when the deployment does
	// not say (Tier.Cores = 0).
	Cores int `yaml:"cores"`
	// LoadBalancing is how a request picks a replica of the next tier:
	// "roundRobin" (mod_jk, C-JDBC) or "random" (what mean value analysis
	// assumes).
	LoadBalancing string `yaml:"loadBalancing"`
	// Admission is what a request meets at a full thread pool.
	Admission Admission    `yaml:"admission"`
	Web       WebModel     `yaml:"web"`
	App       AppModel     `yaml:"app"`
	Cluster   ClusterModel `yaml:"cluster"`
	DB        DBModel      `yaml:"db"`
}

// Admission modes.
const (
	AdmissionBounded   = "bounded"
	AdmissionUnbounded = "unbounded"
)

// Load-balancing policies.
const (
	BalanceRoundRobin = "roundRobin"
	BalanceRandom     = "random"
)

// Accept orders: who gets a thread that frees up.
const (
	OrderFIFO   = "fifo"
	OrderRandom = "random"
)

// Admission describes accept queues and the retries of dropped connections.
type Admission struct {
	// Mode "bounded": a request that finds the pool full waits while fewer
	// than the tier's Backlog wait, otherwise its connection is dropped and
	// retried. "unbounded": everyone waits, first come first served.
	Mode string `yaml:"mode"`
	// RetryAfter is the wait before the first retry of a dropped connection
	// (the TCP SYN retransmission timeout, 3 s in Linux 2.6).
	RetryAfter duration.Seconds `yaml:"retryAfter"`
	// RetryFactor multiplies the wait at each further retry (2: 3, 6, 12 s).
	RetryFactor float64 `yaml:"retryFactor"`
}

// WebModel is the web tier (Apache, worker MPM): a thread per HTTP request.
type WebModel struct {
	// PageDemand, StaticDemand and ImageDemand are mean CPU demands
	// (exponential) of a servlet page request (parse and forward), a static
	// page and an embedded image.
	PageDemand   duration.Seconds `yaml:"pageDemand"`
	StaticDemand duration.Seconds `yaml:"staticDemand"`
	ImageDemand  duration.Seconds `yaml:"imageDemand"`
	// ForwardDelay is a constant latency between the web CPU and the app
	// tier (network, mod_jk); the worker is held through it.
	ForwardDelay duration.Seconds `yaml:"forwardDelay"`
	// Backlog bounds the accept queue in bounded admission.
	Backlog int `yaml:"backlog"`
	// FINWait holds a worker after each response until the client's FIN.
	FINWait FINWait `yaml:"finWait"`
}

// FINWait is the time a web worker waits for the client's FIN after a
// response: exponential with mean Base + PerUser * max(0, users - Threshold)
// (client machines answer later as they host more emulated users).
// A zero mean turns it off.
type FINWait struct {
	Base      duration.Seconds `yaml:"base"`
	PerUser   duration.Seconds `yaml:"perUser"`
	Threshold int              `yaml:"threshold"`
}

// mean is the FIN wait at a workload of users.
func (f FINWait) mean(users int) float64 {
	return float64(f.Base) + float64(f.PerUser)*float64(max(0, users-f.Threshold))
}

// AppModel is the application tier (Tomcat): a thread and a DB connection per
// servlet request, both held for the whole servlet.
type AppModel struct {
	// ServletDemand is the mean CPU demand of a servlet page of the average
	// query count. A page runs q+1 CPU segments (before, between and after its
	// q queries), each exponential with mean ServletDemand/(mean q + 1), so
	// pages with more queries cost more CPU.
	ServletDemand duration.Seconds `yaml:"servletDemand"`
	// QueryDelay is a constant latency per query (driver, network) between
	// the app CPU and the next tier; the connection is held through it.
	QueryDelay duration.Seconds `yaml:"queryDelay"`
	// Backlog bounds the accept queue (Tomcat's acceptCount).
	Backlog int `yaml:"backlog"`
	// AcceptOrder is the order in which waiting requests get a thread in
	// bounded admission: "random" or "fifo" (unbounded admission is FIFO).
	AcceptOrder string `yaml:"acceptOrder"`
	// GC is the JVM's stop-the-world collection; for a Tomcat its unit count
	// is threads + min(connections, threads).
	GC GC `yaml:"gc"`
}

// ClusterModel is the clustering middleware (C-JDBC): one thread per app DB
// connection; every query passes through it to a DB server.
type ClusterModel struct {
	// QueryDemand is the mean CPU demand per query (exponential).
	QueryDemand duration.Seconds `yaml:"queryDemand"`
	// GC is the JVM's collection; its unit count is the connections that
	// the app servers can open, sum of min(connections, threads), shared
	// evenly among the cluster servers.
	GC GC `yaml:"gc"`
}

// DBModel is the database tier (MySQL): one thread per connection.
type DBModel struct {
	// QueryDemand is the mean CPU demand per query (exponential).
	QueryDemand duration.Seconds `yaml:"queryDemand"`
}

// GC is stop-the-world garbage collection of a JVM: after every WorkInterval
// of CPU work the server pauses for WorkInterval * g, g = Base + PerUnit * n,
// n the threads and connections the JVM holds; nothing progresses during a
// pause and it counts as busy CPU. The GC share of a saturated CPU is g/(1+g).
// Base = PerUnit = 0 turns it off.
type GC struct {
	WorkInterval duration.Seconds `yaml:"workInterval"`
	Base         float64          `yaml:"base"`
	PerUnit      float64          `yaml:"perUnit"`
}

// share is g for n units.
func (g GC) share(n int) float64 { return g.Base + g.PerUnit*float64(n) }

func (g GC) enabled() bool { return g.WorkInterval > 0 && (g.Base > 0 || g.PerUnit > 0) }

//go:embed rubbos.yaml
var defaultModelYAML []byte

//go:embed rubbos-browse-only.yaml
var defaultMixYAML []byte

var defaultModel = sync.OnceValues(func() (*Model, error) {
	mix, err := parseMix(defaultMixYAML, "rubbos-browse-only.yaml")
	if err != nil {
		return nil, err
	}
	return parseModel(defaultModelYAML, "rubbos.yaml", func(string) (*Mix, error) { return mix, nil })
})

// DefaultModel is the paper's RUBBoS testbed with the browse-only mix, from
// the embedded rubbos.yaml and rubbos-browse-only.yaml. Each call returns a
// fresh copy that the caller may change; the Mix is shared and read-only.
func DefaultModel() *Model {
	m, err := defaultModel()
	if err != nil {
		panic("sim: embedded default model: " + err.Error()) // a build defect, caught by the tests
	}
	c := *m
	return &c
}

// LoadModel reads a model file; its mix file is read relative to it (the
// embedded browse-only mix when the file names none). Errors name the file
// and the field. A model file is complete, not an overlay on DefaultModel:
// a left-out gc, finWait or delay has always meant zero (off), which an
// overlay would silently turn into the default's value; a left-out
// parameter that has no valid zero is reported as missing.
func LoadModel(path string) (*Model, error) {
	b, err := safefile.Read(path, safefile.MaxInput)
	if err != nil {
		return nil, fmt.Errorf("load model %q: %w", path, err)
	}
	return parseModel(b, path, func(name string) (*Mix, error) {
		if name == "" {
			m, err := defaultModel()
			if err != nil {
				return nil, err
			}
			return m.Mix, nil
		}
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(path), p)
		}
		return readMix(p)
	})
}

// readMix reads a workload mix file, a Model's MixFile.
func readMix(path string) (*Mix, error) {
	b, err := safefile.Read(path, safefile.MaxInput)
	if err != nil {
		return nil, fmt.Errorf("load mix %q: %w", path, err)
	}
	return parseMix(b, path)
}

// completeModel is what a model file must hold, for the messages that find
// it empty or short.
const completeModel = "a model file holds every parameter (those whose zero turns something off may be left out); start from a copy of the default model, internal/sim/rubbos.yaml"

func parseModel(b []byte, name string, loadMix func(string) (*Mix, error)) (*Model, error) {
	m := &Model{}
	if err := oneline.DecodeYAML(b, m); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("load model %q: the file is empty; %s", name, completeModel)
		}
		return nil, fmt.Errorf("load model %q: %w", name, err)
	}
	if err := m.validateFile(b); err != nil {
		return nil, fmt.Errorf("load model %q: %w", name, err)
	}
	mix, err := loadMix(m.MixFile)
	if err != nil {
		return nil, fmt.Errorf("load model %q: %w", name, err)
	}
	m.Mix = mix
	return m, nil
}

// validateFile is validate for a model read from b: a bad value the file
// holds comes first, then every required parameter it leaves out, in one
// message (a field left out reads as zero, which would otherwise be
// reported as a bad value the file does not hold).
func (m *Model) validateFile(b []byte) error {
	probs := m.problems()
	if len(probs) == 0 {
		return nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return errors.New(probs[0].String()) // decoded already, so not expected
	}
	present := map[string]bool{}
	keyPaths(&root, "", present, 0)
	var missing []string
	for _, p := range probs {
		if present[p.field] {
			return errors.New(p.String())
		}
		// A section left out whole is named once.
		f := p.field
		if top, _, _ := strings.Cut(f, "."); !present[top] {
			f = top
		}
		if !slices.Contains(missing, f) {
			missing = append(missing, f)
		}
	}
	return fmt.Errorf("missing %s: %s", strings.Join(missing, ", "), completeModel)
}

// keyPaths records the dotted path of every mapping key in the document,
// through aliases and merge keys as yaml.v3 decodes them. The model nests
// three deep; depth bounds the walk.
func keyPaths(n *yaml.Node, prefix string, out map[string]bool, depth int) {
	if n == nil || depth > 8 {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			keyPaths(c, prefix, out, depth+1)
		}
	case yaml.AliasNode:
		keyPaths(n.Alias, prefix, out, depth+1)
	case yaml.SequenceNode: // the values of a merge key
		for _, c := range n.Content {
			keyPaths(c, prefix, out, depth+1)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" || (k.Value == "<<" && k.Style == 0) {
				keyPaths(v, prefix, out, depth+1)
				continue
			}
			path := k.Value
			if prefix != "" {
				path = prefix + "." + k.Value
			}
			out[path] = true
			if v.Kind == yaml.MappingNode || v.Kind == yaml.AliasNode {
				keyPaths(v, path, out, depth+1)
			}
		}
	}
}

// validate reports the first parameter out of range, by its YAML path, or
// a model without a mix.
func (m *Model) validate() error {
	if p := m.problems(); len(p) > 0 {
		return errors.New(p[0].String())
	}
	if m.Mix == nil || len(m.Mix.states) == 0 {
		return errors.New("mix: no workload mix loaded (use LoadModel)")
	}
	return nil
}

// problem is a parameter out of range, by its YAML path.
type problem struct{ field, msg string }

func (p problem) String() string { return p.field + ": " + p.msg }

// problems lists every parameter out of range, in the file's order.
func (m *Model) problems() []problem {
	type check struct {
		field string
		v     float64
		ok    bool
		want  string
	}
	nonneg := func(f string, v float64) check { return check{f, v, v >= 0 && !math.IsInf(v, 0), "a time >= 0"} }
	pos := func(f string, v float64) check { return check{f, v, v > 0 && !math.IsInf(v, 0), "a time > 0"} }
	var out []problem
	add := func(cs ...check) {
		for _, c := range cs {
			// An infinite factor or share passed ">= 1" and ">= 0", then
			// failed far from the file (the runner's JSON of the model).
			if !c.ok || math.IsNaN(c.v) || math.IsInf(c.v, 0) {
				out = append(out, problem{c.field, fmt.Sprintf("want %s, got %g", c.want, c.v)})
			}
		}
	}
	oneOf := func(field, got string, want ...string) {
		if !slices.Contains(want, got) {
			out = append(out, problem{field, fmt.Sprintf("want %q or %q, got %q", want[0], want[1], got)})
		}
	}
	gc := func(tier string, g GC) {
		add(nonneg(tier+".gc.workInterval", float64(g.WorkInterval)),
			check{tier + ".gc.base", g.Base, g.Base >= 0, "a number >= 0"},
			check{tier + ".gc.perUnit", g.PerUnit, g.PerUnit >= 0, "a number >= 0"})
	}
	add(nonneg("warmUp", float64(m.WarmUp)),
		check{"cores", float64(m.Cores), m.Cores >= 1, "an integer >= 1"})
	oneOf("loadBalancing", m.LoadBalancing, BalanceRoundRobin, BalanceRandom)
	oneOf("admission.mode", m.Admission.Mode, AdmissionBounded, AdmissionUnbounded)
	add(nonneg("admission.retryAfter", float64(m.Admission.RetryAfter)),
		check{"admission.retryFactor", m.Admission.RetryFactor, m.Admission.RetryFactor >= 1, "a number >= 1"},
		pos("web.pageDemand", float64(m.Web.PageDemand)),
		pos("web.staticDemand", float64(m.Web.StaticDemand)),
		pos("web.imageDemand", float64(m.Web.ImageDemand)),
		nonneg("web.forwardDelay", float64(m.Web.ForwardDelay)),
		check{"web.backlog", float64(m.Web.Backlog), m.Web.Backlog >= 0, "an integer >= 0"},
		nonneg("web.finWait.base", float64(m.Web.FINWait.Base)),
		nonneg("web.finWait.perUser", float64(m.Web.FINWait.PerUser)),
		check{"web.finWait.threshold", float64(m.Web.FINWait.Threshold), m.Web.FINWait.Threshold >= 0, "an integer >= 0"},
		pos("app.servletDemand", float64(m.App.ServletDemand)),
		nonneg("app.queryDelay", float64(m.App.QueryDelay)),
		check{"app.backlog", float64(m.App.Backlog), m.App.Backlog >= 0, "an integer >= 0"})
	oneOf("app.acceptOrder", m.App.AcceptOrder, OrderFIFO, OrderRandom)
	gc("app", m.App.GC)
	add(pos("cluster.queryDemand", float64(m.Cluster.QueryDemand)))
	gc("cluster", m.Cluster.GC)
	add(pos("db.queryDemand", float64(m.DB.QueryDemand)))
	return out
}

// AdaptiveRampUp is the least warm-up of an adaptive trial on the
// simulator: the end of the transient is found in the data (MSER-5), so
// this only keeps the first think time out of every window. MSER-5 put the
// transient at 0 s below saturation and 15-30 s near and past it in every
// trial measured (docs/evaluation.md), and needs 50 s of data to say so.
const AdaptiveRampUp = 10 * time.Second

// DefaultTiming is the simulator's trial: the default model's warm-up, the
// paper's 12-minute runtime, no ramp-down. The paper's 8-minute ramp-up let
// JVMs compile and caches fill; the simulator has neither and only needs the
// closed network in steady state. Users start thinking at random phases, so
// arrivals are steady within a think time (7 s); queues, GC cycles (about
// 0.5 s) and retry back-offs (3-12 s) settle within a few of those, and the
// page mix forgets the session start within a few pages. rubbos.yaml's 60 s
// is about 8 think times: past saturation (30-6-100 at 7,800 users,
// 400-6-6 at 6,000, 400-150-60 at 7,000), 8 minutes instead moved
// throughput, goodput at 2 s and 0.5 s and C-JDBC CPU by at most 0.5%
// (3 seeds, 12 minutes measured). A ramp-down measures nothing, so the
// simulator skips it.
func DefaultTiming() algorithms.Timing {
	return algorithms.Timing{
		RampUp:  time.Duration(float64(DefaultModel().WarmUp) * float64(time.Second)),
		Runtime: 12 * time.Minute,
	}
}
