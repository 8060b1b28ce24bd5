package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/procattr"
)

// Prometheus reads the replica count with an instant query that gives one
// number: e.g. count(up{job="app"} == 1), the targets that are up.
type Prometheus struct {
	api     v1.API
	query   string
	timeout time.Duration
}

// NewPrometheus makes the source; url is Prometheus's base URL.
func NewPrometheus(url, query string, timeout time.Duration) (*Prometheus, error) {
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		return nil, fmt.Errorf("prometheus %q: %w", url, err)
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return &Prometheus{api: v1.NewAPI(c), query: query, timeout: timeout}, nil
}

// Replicas runs the query: one sample, a whole number >= 0. Anything else
// is an error, so that no count is guessed (an empty answer is no target
// matched, not zero replicas).
func (p *Prometheus) Replicas(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	v, _, _, err := p.api.Query(ctx, p.query, time.Now())
	if err != nil {
		return 0, fmt.Errorf("query %s: %w", p.query, err)
	}
	var x float64
	switch r := v.(type) {
	case model.Vector:
		if len(r) != 1 {
			return 0, fmt.Errorf("query %s: %d series, want one number (e.g. count(up{job=\"app\"} == 1)); no series is no target matched", p.query, len(r))
		}
		x = float64(r[0].Value)
	case *model.Scalar:
		x = float64(r.Value)
	default:
		return 0, fmt.Errorf("query %s: a %s, want one number", p.query, v.Type())
	}
	if x < 0 || x != math.Trunc(x) || x > 1<<20 {
		return 0, fmt.Errorf("query %s: %g, want a whole number of replicas", p.query, x)
	}
	return int(x), nil
}

// Hook applies an allocation by running a program whose arguments name
// pools as {tier.pool} ({tier.children} for a children tier), as the live
// runner's hook does.
type Hook struct {
	Argv    []string
	Dir     string
	Timeout time.Duration
}

var (
	hookVar  = regexp.MustCompile(`\{[A-Za-z0-9][A-Za-z0-9_.-]*\.(threads|connections|children|permits)\}`)
	hookOpen = regexp.MustCompile(`\{[A-Za-z0-9][A-Za-z0-9_.-]*\.(threads|connections|children|permits)$`)
)

// Expand gives the hook's argv for a.
func (h Hook) Expand(a algorithms.Allocation) ([]string, error) {
	vars := map[string]string{}
	for tier, p := range a {
		if p.Threads > 0 {
			vars[tier+"."+algorithms.PoolThreads] = strconv.Itoa(p.Threads)
			vars[tier+"."+algorithms.PoolChildren] = strconv.Itoa(p.Threads)
			vars[tier+"."+algorithms.PoolPermits] = strconv.Itoa(p.Threads)
		}
		if p.Connections > 0 {
			vars[tier+"."+algorithms.PoolConnections] = strconv.Itoa(p.Connections)
		}
	}
	out := make([]string, len(h.Argv))
	for i, arg := range h.Argv {
		if hookOpen.MatchString(arg) {
			return nil, fmt.Errorf("hook argument %q: a placeholder is not closed", arg)
		}
		var missing string
		out[i] = hookVar.ReplaceAllStringFunc(arg, func(m string) string {
			if v, ok := vars[m[1:len(m)-1]]; ok {
				return v
			}
			missing = m
			return m
		})
		if missing != "" {
			return nil, fmt.Errorf("hook argument %q: %s names no pool of the plan (it has %s)", arg, missing, describe(a))
		}
	}
	return out, nil
}

// Apply runs the hook; a failure carries its last output.
func (h Hook) Apply(ctx context.Context, a algorithms.Allocation) error {
	argv, err := h.Expand(a)
	if err != nil {
		return err
	}
	if len(argv) == 0 || argv[0] == "" {
		return errors.New("hook: no program")
	}
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = h.Dir
	cmd.Env = procattr.Environ()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Its own process group, so that a timeout stops whatever it started.
	cmd.SysProcAttr = procattr.Child()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		last := strings.TrimSpace(out.String())
		if i := strings.LastIndexByte(last, '\n'); i >= 0 {
			last = last[i+1:]
		}
		if last != "" {
			return fmt.Errorf("hook %s: %w; its last output: %s", strings.Join(argv, " "), err, last)
		}
		return fmt.Errorf("hook %s: %w", strings.Join(argv, " "), err)
	}
	return nil
}
