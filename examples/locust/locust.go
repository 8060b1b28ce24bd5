package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/softalloc/softalloc/internal/procattr"
)

// proc is a started master or worker.
type proc struct {
	name string
	cmd  *osexec.Cmd
	log  string
	done chan struct{}
	err  error // once done is closed
}

func start(name string, argv, env []string, dir, logName string) (*proc, error) {
	path := filepath.Join(dir, logName)
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	// Its own group, so that stopping it stops what it started (ssh's
	// children, gevent's helpers); and it dies with this program.
	cmd.SysProcAttr = procattr.Child()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: start %s: %w", name, strings.Join(argv, " "), err)
	}
	p := &proc{name: name, cmd: cmd, log: path, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process group: SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// status says how the process ended, for messages.
func (p *proc) status() string {
	var ee *osexec.ExitError
	switch {
	case p.err == nil:
		return "exited with status 0"
	case errors.As(p.err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "was killed (" + ws.Signal().String() + ")"
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	return p.err.Error()
}

// lastLine is the last non-empty line of the process's log, for messages.
func (p *proc) lastLine() string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return "none"
	}
	if len(last) > 300 {
		last = last[:300] + "..."
	}
	return last
}

// freePort asks the kernel for a free TCP port on host. Another program may
// take it before the master binds it; the master then fails to start, and
// the exec runner retries.
func freePort(host string) (int, error) {
	if host == "*" {
		host = ""
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// dialHost is where this machine reaches a master bound to bind.
func dialHost(bind string) string {
	if bind == "*" {
		return "127.0.0.1"
	}
	return bind
}

// listens says whether something accepts connections on the master's port.
func listens(bind string, port int) bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(dialHost(bind), strconv.Itoa(port)), 200*time.Millisecond)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// runLocust runs the trial: the master, then the workers, and returns the
// window the master wrote. A worker that ends before the master fails the
// trial at once: its users' pages are lost, and Locust would go on with the
// others.
func runLocust(ctx context.Context, c config, p plan, dir string, logf func(string, ...any)) (window, error) {
	p.ConnectTimeout = c.ConnectTimeout.Duration().Seconds()
	if p.Trial == "" {
		// As the live runner names its trials: the start, in hex nanoseconds.
		p.Trial = strconv.FormatInt(time.Now().UnixNano(), 16)
	}
	src, err := p.render()
	if err != nil {
		return window{}, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return window{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return window{}, err
	}
	lf := filepath.Join(dir, "softalloc_locustfile.py")
	if err := os.WriteFile(lf, []byte(src), 0o644); err != nil {
		return window{}, err
	}
	locust := c.Locust
	if !strings.Contains(locust, "/") {
		if locust, err = osexec.LookPath(locust); err != nil {
			return window{}, fmt.Errorf("locust %q: not found on PATH; set locust: in the settings to the executable (examples/locust/install-locust.sh installs one)", c.Locust)
		}
	}
	port := c.MasterPort
	if port == 0 {
		if port, err = freePort(c.MasterBind); err != nil {
			return window{}, fmt.Errorf("a port for the master: %w", err)
		}
	}
	out := filepath.Join(dir, "window.json")
	_ = os.Remove(out)
	_ = os.Remove(out + ".workers")
	total := p.Timing.RampUp + p.Timing.Runtime + p.Timing.RampDown
	// Users start over the first half of the ramp-up, as in the live
	// runner, so that the second half lets queues settle. The window opens
	// once they all run, at least the ramp-up after the test's start and
	// half of it after the last user's (the locustfile's open_when_running).
	rate := float64(p.Users) / math.Max(p.Timing.RampUp/2, 0.001)
	// The locustfile ends the run itself; --run-time only stops a master
	// whose window clock failed; the window may open up to connectTimeout late.
	backstop := int(math.Ceil(total + p.ConnectTimeout + p.ReplyTimeout + 60))
	masterArgs := []string{locust, "-f", lf, "--master", "--headless",
		"--master-bind-host", c.MasterBind, "--master-bind-port", strconv.Itoa(port),
		"--expect-workers", strconv.Itoa(p.Workers), "--expect-workers-max-wait", strconv.Itoa(int(math.Ceil(c.ConnectTimeout.Duration().Seconds()))),
		"-u", strconv.Itoa(p.Users), "-r", strconv.FormatFloat(rate, 'f', 3, 64), "--run-time", strconv.Itoa(backstop) + "s",
		"--stop-timeout", "0", "--exit-code-on-error", "0", "--only-summary", "--loglevel", "INFO",
		"--softalloc-out", out}
	active := c.active(p.Users)
	if p.Workers != len(active) {
		return window{}, fmt.Errorf("a plan of %d workers for %d users, want %d", p.Workers, p.Users, len(active))
	}
	of := ""
	if len(active) < len(c.Workers) {
		of = fmt.Sprintf("%d of ", len(active))
	}
	logf("locust: %d users on %s%d workers (%s), master %s:%d, %g+%g+%g s; files in %s",
		p.Users, of, len(c.Workers), strings.Join(active, ", "), c.MasterHost, port, p.Timing.RampUp, p.Timing.Runtime, p.Timing.RampDown, dir)
	// The master's start, on its clock (this machine's): its users must run
	// by connectTimeout + half the ramp-up after it.
	masterArgs = append(masterArgs, "--softalloc-began", strconv.FormatFloat(float64(time.Now().UnixMicro())/1e6, 'f', 6, 64))
	master, err := start("master", masterArgs, nil, dir, "master.log")
	if err != nil {
		return window{}, err
	}
	// Locust's own wait for workers (--expect-workers-max-wait) starts only
	// once the master is up: a master that never listens (a wrapper that
	// hangs, an import that never ends) would be waited for until the exec
	// runner's timeout. No worker can connect before it listens, so it must
	// by connectTimeout.
	listenBy := time.Now().Add(c.ConnectTimeout.Duration())
	listening := false
	var workers []*proc
	// All at once, within the exec runner's 5 s grace after its SIGTERM.
	stopAll := func() {
		var wg sync.WaitGroup
		for _, p := range append([]*proc{master}, workers...) {
			wg.Add(1)
			go func() { defer wg.Done(); p.stop(3 * time.Second) }()
		}
		wg.Wait()
	}
	defer stopAll()
	specs := c.workers(locust, c.MasterHost, port)[:len(active)]
	for _, s := range specs {
		var env []string
		if s.Host == localWorker {
			// A worker writes the locustfile it gets from the master to
			// $TMPDIR under the master's file name, and deletes it on exit:
			// two workers sharing one TMPDIR truncate each other's copy while
			// the other imports it (seen as a worker refusing
			// --softalloc-worker, its locustfile read empty).
			tmp := filepath.Join(dir, fmt.Sprintf("worker-%d.tmp", s.Index))
			if err := os.MkdirAll(tmp, 0o700); err != nil {
				return window{}, fmt.Errorf("worker %s: %w", s.Name, err)
			}
			env = []string{"TMPDIR=" + tmp}
		}
		w, err := start("worker "+s.Name, s.Argv, env, dir, fmt.Sprintf("worker-%d.log", s.Index))
		if err != nil {
			return window{}, err
		}
		workers = append(workers, w)
	}
	began := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !master.exited() {
		select {
		case <-ctx.Done():
			return window{}, fmt.Errorf("interrupted %.1f s into the trial; stopped the master and the workers: %w", time.Since(began).Seconds(), ctx.Err())
		case <-master.done:
		case <-tick.C:
			if !listening {
				if listening = listens(c.MasterBind, port); !listening && time.Now().After(listenBy) {
					return window{}, fmt.Errorf("the Locust master did not listen on %s within connectTimeout %v, so no worker could connect; it was still running (last output: %s; log %s)",
						net.JoinHostPort(dialHost(c.MasterBind), strconv.Itoa(port)), c.ConnectTimeout.Duration(), master.lastLine(), master.log)
				}
			}
			for _, w := range workers {
				// Once the master wrote the window, it tells the workers to quit.
				if _, err := os.Stat(out); w.exited() && err != nil {
					return window{}, fmt.Errorf("%s %s %.1f s into the trial, before the master ended it: its users' pages are lost, so the trial is not a measurement (last output: %s; log %s)",
						w.name, w.status(), time.Since(began).Seconds(), w.lastLine(), w.log)
				}
			}
		}
	}
	win, err := readWindow(out)
	if errors.Is(err, os.ErrNotExist) {
		return window{}, masterFailed(master, specs, workers, out, c, port)
	}
	if err != nil {
		return window{}, err
	}
	// The master told the workers to quit: give them a moment to.
	for _, w := range workers {
		select {
		case <-w.done:
		case <-time.After(5 * time.Second):
		}
	}
	if err := win.check(p.Workers); err != nil {
		return win, fmt.Errorf("locust: %w (log %s)", err, master.log)
	}
	for _, x := range win.Workers {
		lag := 0.0
		if x.Thinks > 0 {
			lag = (x.ThinkSeconds - x.ThinkAsked) / float64(x.Thinks)
		}
		logf("locust: worker %s: %d users, %d pages in the window, %d failed, its CPU %.0f%% of a core, thinks %.1f ms longer than drawn",
			x.Worker, x.UsersAtOpen, x.Total.NumRequests, x.Total.NumFailures, 100*x.CPU, 1000*lag)
	}
	return win, nil
}

// masterFailed explains a master that wrote no window: most often it gave up
// waiting for workers, and the message names those it never saw.
func masterFailed(master *proc, specs []worker, workers []*proc, out string, c config, port int) error {
	seen := map[string]bool{}
	if b, err := os.ReadFile(out + ".workers"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			var h struct {
				Worker string `json:"worker"`
			}
			if json.Unmarshal(sc.Bytes(), &h) == nil {
				seen[h.Worker] = true
			}
		}
	}
	if b, _ := os.ReadFile(master.log); !bytes.Contains(b, []byte("Gave up waiting for workers")) {
		return fmt.Errorf("the Locust master %s and wrote no statistics (last output: %s; log %s)", master.status(), master.lastLine(), master.log)
	}
	var missing []string
	for i, s := range specs {
		if seen[s.Name] {
			continue
		}
		state := "still running"
		if workers[i].exited() {
			state = workers[i].status()
		}
		missing = append(missing, fmt.Sprintf("worker %s (%s; last output: %s)", s.Name, state, workers[i].lastLine()))
	}
	sort.Strings(missing)
	return fmt.Errorf("the Locust master (%s:%d) saw %d of its %d workers within %v, then gave up; never connected: %s; each must reach %s:%d",
		c.MasterHost, port, len(specs)-len(missing), len(specs), c.ConnectTimeout.Duration(), strings.Join(missing, "; "), c.MasterHost, port)
}
