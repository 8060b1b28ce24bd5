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
	"github.com/softalloc/softalloc/internal/runner/exec"
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

// session is a started Locust run: its master and workers.
type session struct {
	c         config
	p         plan
	out       string
	port      int
	master    *proc
	workers   []*proc
	specs     []worker
	listenBy  time.Time
	listening bool
	began     time.Time
}

// runLocust runs the trial: the master, then the workers, and returns the
// window the master wrote. A worker that ends before the master fails the
// trial at once: its users' pages are lost, and Locust would go on with the
// others.
func runLocust(ctx context.Context, c config, p plan, dir string, logf func(string, ...any)) (window, error) {
	if p.Ramp {
		return window{}, errors.New("a ramp's plan: run it with runRamp")
	}
	s, err := launch(c, p, dir, logf)
	if err != nil {
		return window{}, err
	}
	defer s.stopAll()
	if err := s.watch(ctx, nil, nil); err != nil {
		return window{}, err
	}
	win, err := readWindow(s.out)
	if errors.Is(err, os.ErrNotExist) {
		return window{}, masterFailed(s.master, s.specs, s.workers, s.out, c, s.port)
	}
	if err != nil {
		return window{}, err
	}
	s.awaitWorkers()
	if err := win.check(p.Workers); err != nil {
		return win, fmt.Errorf("locust: %w (log %s)", err, s.master.log)
	}
	logWorkers(win, logf)
	return win, nil
}

// runRamp runs a ramp (exec protocol version 2) as one Locust run whose
// users rise level by level without a reset (the locustfile's
// SoftallocRamp, Locust's own load shape): after each level's window it
// calls next with the window, and passes the step next returns on to the
// master; a step of 0 users ends the run. The windows are checked as a
// trial's is (every user of the level running when it opened and when it
// closed); the checks of a trial's run (the master listens, no worker ends
// before the master) hold over the whole ramp. A worker that ends fails the
// run naming the window it ended in: the windows handed on before it stand
// (every worker ran its users through them), and the exec runner goes on
// from the level reached in a new run.
func runRamp(ctx context.Context, c config, p plan, dir string, logf func(string, ...any), next func(window) (exec.RampStep, error)) error {
	if !p.Ramp {
		return errors.New("a trial's plan: run it with runLocust")
	}
	s, err := launch(c, p, dir, logf)
	if err != nil {
		return err
	}
	defer s.stopAll()
	here := filepath.Dir(s.out)
	i, users, ended := 0, p.Users, false
	poll := func() error {
		if ended {
			return nil
		}
		w, err := readWindow(filepath.Join(here, fmt.Sprintf("window-%d.json", i)))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if w.Users != users {
			return fmt.Errorf("locust: window %d at %d users, want %d (log %s)", i, w.Users, users, s.master.log)
		}
		if err := w.check(p.Workers); err != nil {
			return fmt.Errorf("locust: window %d at %d users: %w (log %s)", i, users, err, s.master.log)
		}
		logWorkers(w, logf)
		step, err := next(w)
		if err != nil {
			return err
		}
		switch {
		case step.Users < 0:
			return fmt.Errorf("the step after window %d: %d users, want 0 (end) or more", i, step.Users)
		case step.Users != 0 && step.Users < users:
			return fmt.Errorf("the step after window %d: from %d down to %d users; a ramp only rises", i, users, step.Users)
		case step.Users > p.RampMaxUsers:
			return fmt.Errorf("the step after window %d: %d users; want at most %d (the runner section's maxUsers)", i, step.Users, p.RampMaxUsers)
		}
		b, _ := json.Marshal(exec.RampStep{Users: step.Users})
		if err := writeAtomic(filepath.Join(here, fmt.Sprintf("step-%d.json", i)), b); err != nil {
			return err
		}
		if step.Users == 0 {
			ended = true
		} else if step.Users != users {
			logf("locust: window %d done; rising to %d users", i, step.Users)
		}
		i, users = i+1, max(users, step.Users)
		return nil
	}
	where := func() string {
		kept := "no window before it"
		switch {
		case i == 1:
			kept = "window 0 before it stands"
		case i > 1:
			kept = fmt.Sprintf("windows 0 to %d before it stand", i-1)
		}
		return fmt.Sprintf("into the ramp, at %d users before window %d ended: the other workers' users are not the level's load, so the ramp cannot go on in this run; %s", users, i, kept)
	}
	if err := s.watch(ctx, poll, where); err != nil {
		return err
	}
	// A window the master wrote just before it ended (a worker it lost
	// while awaiting the step after it) was measured whole: hand it on.
	if err := poll(); err != nil {
		return err
	}
	end, err := readWindow(s.out)
	if errors.Is(err, os.ErrNotExist) {
		return masterFailed(s.master, s.specs, s.workers, s.out, c, s.port)
	}
	if err != nil {
		return err
	}
	s.awaitWorkers()
	switch {
	case end.Error != "":
		return fmt.Errorf("locust: window %d at %d users: %s (log %s)", i, users, end.Error, s.master.log)
	case !ended || !end.Ended:
		return fmt.Errorf("locust: the master ended the run before the ramp ended (at %d users, window %d); log %s", users, i, s.master.log)
	}
	return nil
}

// writeAtomic writes b to path through a rename, so that a reader polling
// for path never reads it half written.
func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func logWorkers(win window, logf func(string, ...any)) {
	for _, x := range win.Workers {
		lag := 0.0
		if x.Thinks > 0 {
			lag = (x.ThinkSeconds - x.ThinkAsked) / float64(x.Thinks)
		}
		logf("locust: worker %s: %d users, %d pages in the window, %d failed, its CPU %.0f%% of a core, thinks %.1f ms longer than drawn",
			x.Worker, x.UsersAtOpen, x.Total.NumRequests, x.Total.NumFailures, 100*x.CPU, 1000*lag)
	}
}

// launch writes the locustfile and starts the master, then the workers.
func launch(c config, p plan, dir string, logf func(string, ...any)) (*session, error) {
	p.ConnectTimeout = c.ConnectTimeout.Duration().Seconds()
	if p.Trial == "" {
		// As the live runner names its trials: the start, in hex nanoseconds.
		p.Trial = strconv.FormatInt(time.Now().UnixNano(), 16)
	}
	src, err := p.render()
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lf := filepath.Join(dir, "softalloc_locustfile.py")
	if err := os.WriteFile(lf, []byte(src), 0o644); err != nil {
		return nil, err
	}
	locust := c.Locust
	if !strings.Contains(locust, "/") {
		if locust, err = osexec.LookPath(locust); err != nil {
			return nil, fmt.Errorf("locust %q: not found on PATH; set locust: in the settings to the executable (examples/locust/install-locust.sh installs one)", c.Locust)
		}
	}
	port := c.MasterPort
	if port == 0 {
		if port, err = freePort(c.MasterBind); err != nil {
			return nil, fmt.Errorf("a port for the master: %w", err)
		}
	}
	out := filepath.Join(dir, "window.json")
	// The same experiment run again (without a journal) has the same
	// directory: none of an earlier run's files may pass for this run's.
	stale := []string{out, out + ".workers"}
	for _, pat := range []string{"window-*.json", "step-*.json", "window-*.observation.json"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		stale = append(stale, m...)
	}
	for _, f := range stale {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("an earlier run's file: %w", err)
		}
	}
	total := p.Timing.RampUp + p.Timing.Runtime + p.Timing.RampDown
	masterArgs := []string{locust, "-f", lf, "--master", "--headless",
		"--master-bind-host", c.MasterBind, "--master-bind-port", strconv.Itoa(port),
		"--expect-workers", strconv.Itoa(p.Workers), "--expect-workers-max-wait", strconv.Itoa(int(math.Ceil(c.ConnectTimeout.Duration().Seconds())))}
	if !p.Ramp {
		// Users start over the first half of the ramp-up, as in the live
		// runner, so that the second half lets queues settle. The window opens
		// once they all run, at least the ramp-up after the test's start and
		// half of it after the last user's (the locustfile's open_when_running).
		// A ramp's load shape sets its own users and rate at each level.
		rate := float64(p.Users) / math.Max(p.Timing.RampUp/2, 0.001)
		// The locustfile ends the run itself; --run-time only stops a master
		// whose window clock failed; the window may open up to connectTimeout
		// late. (Locust ignores it under a load shape: a ramp's master is
		// stopped by the exec runner's timeout of each window.)
		backstop := int(math.Ceil(total + p.ConnectTimeout + p.ReplyTimeout + 60))
		masterArgs = append(masterArgs, "-u", strconv.Itoa(p.Users), "-r", strconv.FormatFloat(rate, 'f', 3, 64), "--run-time", strconv.Itoa(backstop)+"s")
	}
	masterArgs = append(masterArgs, "--stop-timeout", "0", "--exit-code-on-error", "0", "--only-summary", "--loglevel", "INFO",
		"--softalloc-out", out)
	most := p.Users
	if p.Ramp {
		most = p.RampMaxUsers
	}
	active := c.active(most)
	if p.Workers != len(active) {
		return nil, fmt.Errorf("a plan of %d workers for %d users, want %d", p.Workers, most, len(active))
	}
	of := ""
	if len(active) < len(c.Workers) {
		of = fmt.Sprintf("%d of ", len(active))
	}
	what := fmt.Sprintf("%d users", p.Users)
	if p.Ramp {
		what = fmt.Sprintf("a ramp from %d users", p.Users)
	}
	logf("locust: %s on %s%d workers (%s), master %s:%d, %g+%g+%g s; files in %s",
		what, of, len(c.Workers), strings.Join(active, ", "), c.MasterHost, port, p.Timing.RampUp, p.Timing.Runtime, p.Timing.RampDown, dir)
	// The master's start, on its clock (this machine's): its users must run
	// by connectTimeout + half the ramp-up after it.
	masterArgs = append(masterArgs, "--softalloc-began", strconv.FormatFloat(float64(time.Now().UnixMicro())/1e6, 'f', 6, 64))
	master, err := start("master", masterArgs, nil, dir, "master.log")
	if err != nil {
		return nil, err
	}
	s := &session{c: c, p: p, out: out, port: port, master: master,
		// Locust's own wait for workers (--expect-workers-max-wait) starts
		// only once the master is up: a master that never listens (a wrapper
		// that hangs, an import that never ends) would be waited for until
		// the exec runner's timeout. No worker can connect before it
		// listens, so it must by connectTimeout.
		listenBy: time.Now().Add(c.ConnectTimeout.Duration())}
	s.specs = c.workers(locust, c.MasterHost, port)[:len(active)]
	for _, w := range s.specs {
		var env []string
		if w.Host == localWorker {
			// A worker writes the locustfile it gets from the master to
			// $TMPDIR under the master's file name, and deletes it on exit:
			// two workers sharing one TMPDIR truncate each other's copy while
			// the other imports it (seen as a worker refusing
			// --softalloc-worker, its locustfile read empty).
			tmp := filepath.Join(dir, fmt.Sprintf("worker-%d.tmp", w.Index))
			if err := os.MkdirAll(tmp, 0o700); err != nil {
				s.stopAll()
				return nil, fmt.Errorf("worker %s: %w", w.Name, err)
			}
			env = []string{"TMPDIR=" + tmp}
		}
		wp, err := start("worker "+w.Name, w.Argv, env, dir, fmt.Sprintf("worker-%d.log", w.Index))
		if err != nil {
			s.stopAll()
			return nil, err
		}
		s.workers = append(s.workers, wp)
	}
	s.began = time.Now()
	return s, nil
}

// stopAll stops the master and the workers, all at once, within the exec
// runner's 5 s grace after its SIGTERM.
func (s *session) stopAll() {
	var wg sync.WaitGroup
	for _, p := range append([]*proc{s.master}, s.workers...) {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop(3 * time.Second) }()
	}
	wg.Wait()
}

// watch waits for the master to end, and fails at once if it does not
// listen by connectTimeout or a worker ends before the master wrote its
// last file. poll, if not nil, runs every tick; its error ends the run.
// where, if not nil, says where a ramp is for the error of a worker that
// ended ("into the ramp, at ..."), after a last poll has handed on any
// window that was complete.
func (s *session) watch(ctx context.Context, poll func() error, where func() string) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !s.master.exited() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted %.1f s into the trial; stopped the master and the workers: %w", time.Since(s.began).Seconds(), ctx.Err())
		case <-s.master.done:
		case <-tick.C:
			if !s.listening {
				if s.listening = listens(s.c.MasterBind, s.port); !s.listening && time.Now().After(s.listenBy) {
					return fmt.Errorf("the Locust master did not listen on %s within connectTimeout %v, so no worker could connect; it was still running (last output: %s; log %s)",
						net.JoinHostPort(dialHost(s.c.MasterBind), strconv.Itoa(s.port)), s.c.ConnectTimeout.Duration(), s.master.lastLine(), s.master.log)
				}
			}
			for _, w := range s.workers {
				// Once the master wrote the window, it tells the workers to quit.
				if _, err := os.Stat(s.out); w.exited() && err != nil {
					took := time.Since(s.began).Seconds()
					if where == nil {
						return fmt.Errorf("%s %s %.1f s into the trial, before the master ended it: its users' pages are lost, so the trial is not a measurement (last output: %s; log %s)",
							w.name, w.status(), took, w.lastLine(), w.log)
					}
					// The worker's end is the cause, whatever the last poll finds.
					_ = poll()
					return fmt.Errorf("%s %s %.1f s %s (last output: %s; log %s)", w.name, w.status(), took, where(), w.lastLine(), w.log)
				}
			}
			if poll != nil {
				if err := poll(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// awaitWorkers gives the workers a moment to quit, as the master told them.
func (s *session) awaitWorkers() {
	for _, w := range s.workers {
		select {
		case <-w.done:
		case <-time.After(5 * time.Second):
		}
	}
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
