package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// deploymentShape is what of a deployment file decides which resource a
// campaign finds critical: the tiers, the pools it starts from, where the
// load goes, and what every tier's servers are read by. Two files of the
// same shape give one campaign the same experiments; the trials' lengths,
// the name and the software's snippets are left out.
type deploymentShape struct {
	Tiers []struct {
		Name     string         `yaml:"name"`
		Role     string         `yaml:"role"`
		Replicas int            `yaml:"replicas"`
		Pools    map[string]int `yaml:"pools"`
	} `yaml:"tiers"`
	Runner struct {
		Target     string   `yaml:"target"`
		Prometheus string   `yaml:"prometheus"`
		Health     string   `yaml:"health"`
		Workload   string   `yaml:"workload"`
		Hook       []string `yaml:"hook"`
		Tiers      map[string]struct {
			Presets []string            `yaml:"presets"`
			Servers []map[string]string `yaml:"servers"`
			Queries map[string]string   `yaml:"queries"`
		} `yaml:"tiers"`
	} `yaml:"runner"`
}

// readShape reads a deployment file's shape, its relative paths (the
// workload, the hook's program) made absolute from the file's directory as
// the runner resolves them.
func readShape(t *testing.T, path string) deploymentShape {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var s deploymentShape
	require.NoError(t, yaml.Unmarshal(data, &s), "%s", path)
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(filepath.Dir(path), p)
	}
	s.Runner.Workload = abs(s.Runner.Workload)
	if len(s.Runner.Hook) > 0 && strings.Contains(s.Runner.Hook[0], "/") {
		s.Runner.Hook[0] = abs(s.Runner.Hook[0])
	}
	return s
}

var placeholder = regexp.MustCompile(`\{(\w+)\.(\w+)\}`)

// initAgreesWithHandWritten is docs/your-stack.md's discovery on a stack
// the project wired by hand: with the hand-written file's pools running,
// softalloc init against the stack's Prometheus writes a file of the
// hand-written one's shape, and doctor passes it. A campaign on it then runs
// the experiments of the hand-written file's, whose critical resource the
// caller's find-critical checks. Seconds: init's queries and doctor's probe.
func initAgreesWithHandWritten(t *testing.T, handWritten string) {
	t.Helper()
	start := time.Now()
	want := readShape(t, filepath.Join(repo, handWritten))
	pools := map[string]int{}
	for _, tier := range want.Tiers {
		for pool, n := range tier.Pools {
			pools[tier.Name+"."+pool] = n
		}
	}
	// init reads the pools running now: the hand-written file's, applied by
	// its own hook (the testbed's apply is a no-op when they run already).
	var argv []string
	for _, a := range want.Runner.Hook {
		argv = append(argv, placeholder.ReplaceAllStringFunc(a, func(m string) string {
			p := placeholder.FindStringSubmatch(m)
			n, ok := pools[p[1]+"."+p[2]]
			require.True(t, ok, "the hook's %s has no pool in %s", m, handWritten)
			return strconv.Itoa(n)
		}))
	}
	run(t, exec.Command(argv[0], argv[1:]...))

	file := filepath.Join(t.TempDir(), "deployment.yaml")
	args := []string{"init", "--prometheus", want.Runner.Prometheus, "--target", want.Runner.Target, "--health", want.Runner.Health,
		"--workload", want.Runner.Workload, "--hook", strings.Join(want.Runner.Hook, ","), "--force", "-o", file}
	// A pool the hook just changed reaches Prometheus at its next scrape of
	// the restarted server: init again until its file has the running pools.
	var got deploymentShape
	for deadline := time.Now().Add(30 * time.Second); ; {
		run(t, exec.Command(binary, args...))
		if got = readShape(t, file); assert.ObjectsAreEqual(want, got) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	written, err := os.ReadFile(file)
	require.NoError(t, err)
	t.Logf("init wrote\n%s", written)
	require.Equal(t, want, got, "init's deployment file against %s", handWritten)

	// doctor in the client's cgroup, as a campaign's load generator runs.
	cmd := exec.Command(filepath.Join(repo, "testbed", "testbed.sh"), "exec-client", binary, "doctor", "-f", file, "--output", "json")
	cmd.Dir = repo
	out, err := cmd.Output()
	var doc struct {
		OK       bool     `json:"ok"`
		Problems []string `json:"problems"`
		Warnings []string `json:"warnings"`
		Probe    struct {
			Pages  int `json:"pages"`
			Failed struct {
				Refused, TimedOut, ServerErrors, Other int
			} `json:"failed"`
		} `json:"probe"`
	}
	require.NoError(t, json.Unmarshal(out, &doc), "doctor: %v\n%s", err, out)
	t.Logf("doctor: ok %v, problems %q, warnings %q", doc.OK, doc.Problems, doc.Warnings)
	assert.True(t, doc.OK, "doctor passes init's file: %q", doc.Problems)
	assert.NoError(t, err, "doctor's exit status")
	assert.Positive(t, doc.Probe.Pages, "doctor probed the stack")
	assert.Zero(t, doc.Probe.Failed, "the probe's pages")
	t.Logf("init and doctor on %s's stack: %.0f s", handWritten, time.Since(start).Seconds())
}
