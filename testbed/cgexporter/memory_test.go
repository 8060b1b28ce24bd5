package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/runner/live"
)

const childEnv = "SOFTALLOC_CGEXPORTER_TEST_CHILD"

// TestMain turns the test binary into the allocating child when asked: for
// each number it reads it touches that many MiB more and says "ready"; for
// "write MiB PATH" it writes a file of that size (page cache charged to its
// cgroup) and syncs it; it exits when its stdin closes.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "" {
		os.Exit(m.Run())
	}
	// The write's buffer is read once before any figure is taken: under the
	// race detector a buffer's first read makes its shadow resident (4 MiB
	// for this 1 MiB, charged to the cgroup: a CI run saw the working set
	// grow by exactly that across the write), which is not page cache.
	chunk := make([]byte, 1<<20)
	if err := os.WriteFile(os.DevNull, chunk, 0); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	in := bufio.NewScanner(os.Stdin)
	var held [][]byte
	for in.Scan() {
		if f := strings.Fields(in.Text()); len(f) == 3 && f[0] == "write" {
			mib, _ := strconv.Atoi(f[1])
			if err := writeSynced(f[2], mib, chunk); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				os.Exit(3)
			}
			fmt.Println("ready")
			continue
		}
		mib, err := strconv.Atoi(strings.TrimSpace(in.Text()))
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
		b := make([]byte, mib<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // touched: charged to the cgroup
		}
		held = append(held, b)
		fmt.Println("ready")
	}
	_ = held
	os.Exit(0)
}

func writeSynced(path string, mib int, chunk []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	for i := 0; i < mib; i++ {
		if _, err := f.Write(chunk); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// memoryCgroup makes a cgroup of its own with a memory limit on the
// machine's hierarchy (v1 memory, or v2), removed by the test's cleanup. It
// skips where cgroups are not writable, and fails under CI=true.
func memoryCgroup(t *testing.T, limit int64) (dir, mode string) {
	t.Helper()
	unavailable := func(why string, a ...any) {
		msg := fmt.Sprintf(why, a...)
		if os.Getenv("CI") == "true" {
			t.Fatalf("cgroups: %s; CI runs as root on a machine with a memory controller", msg)
		}
		t.Skipf("SKIPPED: the cgroup memory test needs a writable memory controller: %s", msg)
	}
	name := fmt.Sprintf("softalloc-test-%d", os.Getpid())
	switch {
	case fileExists("/sys/fs/cgroup/memory/memory.limit_in_bytes"):
		dir, mode = filepath.Join("/sys/fs/cgroup/memory", name), "v1"
	case fileExists("/sys/fs/cgroup/cgroup.controllers"):
		b, _ := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control")
		if !strings.Contains(string(b), "memory") {
			unavailable("the v2 root does not delegate the memory controller (cgroup.subtree_control: %q)", strings.TrimSpace(string(b)))
		}
		dir, mode = filepath.Join("/sys/fs/cgroup", name), "v2"
	default:
		unavailable("no v1 memory hierarchy and no v2 root under /sys/fs/cgroup")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		unavailable("mkdir %s: %v", dir, err)
	}
	t.Cleanup(func() {
		// A cgroup is removed once its last process has gone.
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("remove %s: %v", dir, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	write := func(file, v string) {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644))
	}
	if mode == "v1" {
		write("memory.limit_in_bytes", strconv.FormatInt(limit, 10))
		write("memory.swappiness", "0") // exceeding the limit kills, it does not swap
	} else {
		write("memory.max", strconv.FormatInt(limit, 10))
		if fileExists(filepath.Join(dir, "memory.swap.max")) {
			write("memory.swap.max", "0")
		}
	}
	return dir, mode
}

// testTier is a tier of its own for the exporter: a memory cgroup limited
// to limit bytes, and on v1 the cpu and cpuacct groups the exporter reads
// for CPU; src reads it, tier is its name, dir its memory cgroup.
func testTier(t *testing.T, limit int64) (src source, tier, dir, mode string) {
	t.Helper()
	dir, mode = memoryCgroup(t, limit)
	tier = filepath.Base(dir)
	if mode == "v2" {
		return v2{root: filepath.Dir(dir)}, tier, dir, mode
	}
	// The memory hierarchy holds the tier; the cpu ones are read for CPU.
	for _, h := range []string{"cpu", "cpuacct"} {
		g := filepath.Join("/sys/fs/cgroup", h, tier)
		require.NoError(t, os.Mkdir(g, 0o755))
		t.Cleanup(func() { _ = os.Remove(g) })
	}
	return v1{cpu: "/sys/fs/cgroup/cpu", acct: "/sys/fs/cgroup/cpuacct", mem: "/sys/fs/cgroup/memory"}, tier, dir, mode
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// child starts the test binary as an allocating child inside dir.
type child struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines *bufio.Scanner
}

func startChild(t *testing.T, dir string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644))
	return &child{cmd: cmd, in: in, lines: bufio.NewScanner(out)}
}

// allocate asks the child to touch mib more MiB; false when it died doing it.
func (c *child) allocate(t *testing.T, mib int) bool {
	t.Helper()
	_, err := fmt.Fprintln(c.in, mib)
	if err != nil {
		return false
	}
	return c.lines.Scan() && c.lines.Text() == "ready"
}

// TestExporterReadsATiersMemoryAndItsOOMKills runs a process that touches
// 40 MiB in a cgroup limited to 160 MiB (room for the race detector's
// shadow), reads the exporter's figures, has it write a 32 MiB file (page
// cache), then touch 256 MiB more, and sees the OOM killer's kill counted.
func TestExporterReadsATiersMemoryAndItsOOMKills(t *testing.T) {
	const mib = 1 << 20
	src, tier, dir, mode := testTier(t, 160*mib)

	c := startChild(t, dir)
	require.True(t, c.allocate(t, 40), "the child touched 40 MiB under a 160 MiB limit")
	st, err := src.read(tier)
	require.NoError(t, err)
	m := st.mem
	t.Logf("%s at 40 MiB touched: usage %.1f MiB, working set %.1f MiB, limit %.0f MiB", mode, m.usage/mib, m.workingSet/mib, m.limit/mib)
	assert.Equal(t, "cgroup", m.source)
	assert.Equal(t, float64(160*mib), m.limit)
	assert.True(t, m.limited)
	assert.GreaterOrEqual(t, m.workingSet, float64(40*mib), "the touched pages are in the working set")
	if !raceEnabled { // its shadow memory is charged to the cgroup too
		assert.Less(t, m.workingSet, float64(80*mib), "40 MiB and a Go runtime")
	}
	assert.GreaterOrEqual(t, m.usage, m.workingSet)
	assert.Equal(t, 0.0, m.oomKills)

	// Page cache is charged, but the kernel reclaims it before it kills:
	// usage counts a file just written, the working set does not.
	_, err = fmt.Fprintln(c.in, "write 32", filepath.Join(t.TempDir(), "cache"))
	require.NoError(t, err)
	require.True(t, c.lines.Scan() && c.lines.Text() == "ready", "the child wrote 32 MiB")
	st, err = src.read(tier)
	require.NoError(t, err)
	t.Logf("after writing a 32 MiB file: usage %.1f MiB, working set %.1f MiB", st.mem.usage/mib, st.mem.workingSet/mib)
	assert.GreaterOrEqual(t, st.mem.usage-m.usage, float64(30*mib), "the file's pages are charged")
	assert.Less(t, st.mem.workingSet-m.workingSet, float64(4*mib), "and are not the working set")

	// The collector exports what was read.
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(&collector{src: src, tiers: []string{tier}}))
	n, err := testutil.GatherAndCount(reg, "softalloc_testbed_memory_working_set_bytes", "softalloc_testbed_memory_limit_bytes",
		"softalloc_testbed_memory_oom_kills_total", "softalloc_testbed_memory_usage_bytes", "softalloc_testbed_memory_limit_hits_total")
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	lint, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, lint)

	// Past the limit, the OOM killer ends the child (no swap to go to).
	assert.False(t, c.allocate(t, 256), "the child outlived touching 296 MiB under 160 MiB")
	err = c.cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	ws, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	assert.Equal(t, syscall.SIGKILL, ws.Signal(), "killed by the OOM killer")
	st, err = src.read(tier)
	require.NoError(t, err)
	assert.Equal(t, 1.0, st.mem.oomKills, "the kill is counted")
	assert.Greater(t, st.mem.limitHits, 0.0, "the limit was hit")
	t.Logf("after the kill: %v OOM kills, the limit hit %v times", st.mem.oomKills, st.mem.limitHits)
}

func TestMemoryWithoutALimitIsTheMachines(t *testing.T) {
	total, err := machineMemory()
	require.NoError(t, err)
	dir := t.TempDir()
	for f, v := range map[string]string{
		"memory.current": "104857600\n", "memory.max": "max\n",
		"memory.stat":   "anon 52428800\nfile 52428800\ninactive_file 31457280\nactive_file 20971520\n",
		"memory.events": "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
		"memory.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=1500000\n" +
			"full avg10=0.00 avg60=0.00 avg300=0.00 total=250000\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644))
	}
	m, err := memoryV2(dir)
	require.NoError(t, err)
	assert.Equal(t, total, m.limit, "no limit: the machine's memory")
	assert.False(t, m.limited)
	assert.Equal(t, float64(100<<20), m.usage)
	assert.Equal(t, float64(70<<20), m.workingSet, "usage less the inactive page cache")
	assert.Equal(t, 1.0, m.oomKills)
	assert.Equal(t, 3.0, m.limitHits)
	assert.Equal(t, 1.5, m.someStall)
	assert.Equal(t, 0.25, m.fullStall)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "memory.max"), []byte("67108864\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "memory.pressure")))
	m, err = memoryV2(dir)
	require.NoError(t, err)
	assert.Equal(t, float64(64<<20), m.limit)
	assert.True(t, m.limited)
	assert.Equal(t, -1.0, m.someStall, "no PSI: unknown, not 0")
}

func TestSiblingHierarchy(t *testing.T) {
	assert.Equal(t, "/sys/fs/cgroup/memory/softalloc-testbed", siblingHierarchy("/sys/fs/cgroup/cpu/softalloc-testbed", "memory"))
	assert.Equal(t, "/sys/fs/cgroup/memory/a/b", siblingHierarchy("/sys/fs/cgroup/cpu,cpuacct/a/b/", "memory"))
	assert.Equal(t, "", siblingHierarchy("/tmp/x", "memory"))
}

// Every metric the live runner's cgroup preset queries is one this exporter
// writes (on cgroup v2 with PSI, where it writes them all).
func TestTheCgroupPresetQueriesWhatTheExporterWrites(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "app")
	require.NoError(t, os.Mkdir(dir, 0o755))
	for f, v := range map[string]string{
		"cpu.stat":       "usage_usec 5000000\nnr_periods 100\nnr_throttled 7\nthrottled_usec 90000\n",
		"cpu.max":        "50000 100000\n",
		"memory.current": "104857600\n", "memory.max": "268435456\n",
		"memory.stat":     "inactive_file 1048576\n",
		"memory.events":   "max 0\noom_kill 0\n",
		"memory.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644))
	}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(&collector{src: v2{root: root}, tiers: []string{"app"}}))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	written := map[string]bool{}
	for _, mf := range mfs {
		written[mf.GetName()] = true
	}
	name := regexp.MustCompile(`softalloc_testbed_[a-z_]+`)
	var queried []string
	for _, q := range live.Presets["cgroup"].List() {
		queried = append(queried, name.FindAllString(q.Query, -1)...)
	}
	require.NotEmpty(t, queried)
	for _, n := range queried {
		assert.True(t, written[n], "the cgroup preset queries %s, which cgexporter does not write", n)
	}
}
