package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/runner/exec"
)

// The adapter speaks exec protocol versions 1 and 2 (the ramp), and says
// so when given another, or a ramp in version 1.
func TestTheAdapterSpeaksVersions1And2(t *testing.T) {
	dir := t.TempDir()
	settings := writeFile(t, filepath.Join(dir, "s.yaml"), "deployment: missing.yaml\nworkers: [local]\n")
	req := func(version int, ramp bool) io.Reader {
		return strings.NewReader(fmt.Sprintf(`{"protocolVersion":%d,"experimentId":"x","attempt":1,"topology":"local","ramp":%t,`+
			`"tiers":[{"name":"web","role":"web","replicas":1,"cores":1,"pools":{"threads":10},"servers":["web-1"]}],`+
			`"workload":{"users":10},"timing":{"rampUpSeconds":2,"runtimeSeconds":4,"rampDownSeconds":1,"precision":0.02}}`+"\n", version, ramp))
	}
	var out, errb strings.Builder
	err := run(context.Background(), []string{settings}, req(3, false), &out, &errb)
	require.EqualError(t, err, "protocol version 3: this program speaks 1 and 2")
	err = run(context.Background(), []string{settings}, req(1, true), &out, &errb)
	require.EqualError(t, err, "a ramp in protocol version 1: ramps are version 2")
	// Past the version, to the deployment file (absent here).
	for _, v := range []int{1, 2} {
		err = run(context.Background(), []string{settings}, req(v, v == 2), &out, &errb)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "missing.yaml", "version %d", v)
	}
	assert.Empty(t, out.String())
}

// fakeRampMaster writes a "locust" that plays a ramp's master with the
// file handshake of the locustfile's run_ramp: for each level it writes
// window-<i>.json (every user running) and waits for step-<i>.json; a step
// of 0 users ends the run with {"ended": true}. As a worker it waits for
// the master's last file, as a Locust worker waits for the master's quit.
// Real Locust is not needed: the handshake is softalloc-locust's.
func fakeRampMaster(t *testing.T, dir string) string {
	t.Helper()
	return writeExec(t, filepath.Join(dir, "fake-locust"), `#!/usr/bin/env python3
import json, os, socket, sys, time
args = sys.argv[1:]
# die (beside this file), "WORKER I": that worker is killed once window I is
# written, and the master then waits for its statistics, as Locust's does.
die = os.path.join(os.path.dirname(os.path.abspath(__file__)), "die")
victim, at = open(die).read().split() if os.path.exists(die) else ("", "-1")
if "--master" not in args:
    me = args[args.index("--softalloc-worker") + 1]
    while not os.path.exists("window.json"):
        if me == victim and os.path.exists("window-%s.json" % at):
            os.kill(os.getpid(), 9)
        time.sleep(0.02)
    sys.exit(0)
opt = lambda k: args[args.index(k) + 1]
out = opt("--softalloc-out")
here = os.path.dirname(out)
s = socket.socket()
s.bind((opt("--master-bind-host"), int(opt("--master-bind-port"))))
s.listen()
line = [l for l in open(opt("-f")).read().split("\n") if l.startswith("PLAN = json.loads(")][0]
plan = json.loads(json.loads(line[len("PLAN = json.loads("):-1]))
users, began = plan["users"], time.time()
def write(path, doc):
    open(path + ".tmp", "w").write(json.dumps(doc))
    os.replace(path + ".tmp", path)
for i in range(100):
    n = plan["workers"]
    per = [users // n + (1 if k < users % n else 0) for k in range(n)]
    opened = time.time()
    write(os.path.join(here, "window-%d.json" % i), {"users": users, "index": i, "began": began,
        "window": {"start": opened, "end": opened + 1, "seconds": 1},
        "workers": [{"worker": "%d@local" % (k + 1), "usersAtOpen": per[k], "usersAtClose": per[k]} for k in range(n)],
        "total": {"num_requests": 0, "num_failures": 0, "total_response_time": 0, "response_times": {}}})
    step = os.path.join(here, "step-%d.json" % i)
    while not os.path.exists(step):
        time.sleep(0.02)
    asked = json.load(open(step))["users"]
    while str(i) == at:
        time.sleep(1)
    if asked == 0:
        break
    users = asked
write(out, {"users": users, "ended": True})
`)
}

func writeExec(t *testing.T, path, text string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(text), 0o755))
	return path
}

// fakeRamp runs runRamp on the fake master with two local workers, from
// 10 users, answering each window with the next of steps.
func fakeRamp(t *testing.T, steps ...int) ([]window, string, error) {
	t.Helper()
	return fakeRampIn(t, t.TempDir(), steps...)
}

func fakeRampIn(t *testing.T, dir string, steps ...int) ([]window, string, error) {
	t.Helper()
	c, err := loadConfig(writeFile(t, filepath.Join(dir, "s.yaml"),
		fmt.Sprintf("deployment: d.yaml\nlocust: %s\nworkers: [local, local]\nconnectTimeout: 5s\n", fakeRampMaster(t, dir))))
	require.NoError(t, err)
	p := plan{Target: "http://127.0.0.1:1", Users: 10, Workers: 2, ReplyTimeout: 1, Ramp: true, RampMaxUsers: 50}
	p.Timing.RampUp, p.Timing.Runtime, p.Timing.RampDown = 2, 1, 0
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wins []window
	run := filepath.Join(dir, "run")
	err = runRamp(ctx, c, p, run, func(string, ...any) {}, func(w window) (exec.RampStep, error) {
		wins = append(wins, w)
		return exec.RampStep{Users: steps[len(wins)-1]}, nil
	})
	return wins, run, err
}

// Each window goes to next as the master wrote it, and each step back to
// the master, until a step of 0 users ends the run: another window at the
// same level, then a rise, then the end.
func TestARampPassesEachStepToTheMaster(t *testing.T) {
	wins, run, err := fakeRamp(t, 10, 30, 0)
	require.NoError(t, err)
	require.Len(t, wins, 3)
	for i, users := range []int{10, 10, 30} {
		assert.Equal(t, i, wins[i].Index)
		assert.Equal(t, users, wins[i].Users)
	}
	for i, users := range []int{10, 30, 0} {
		b, err := os.ReadFile(filepath.Join(run, fmt.Sprintf("step-%d.json", i)))
		require.NoError(t, err)
		var s exec.RampStep
		require.NoError(t, json.Unmarshal(b, &s))
		assert.Equal(t, users, s.Users, "step %d", i)
	}
}

// A step down, or past the runner section's maxUsers, ends the ramp with
// an error naming it; the master is stopped.
func TestARampRefusesABadStep(t *testing.T) {
	_, _, err := fakeRamp(t, 30, 20)
	require.EqualError(t, err, "the step after window 1: from 30 down to 20 users; a ramp only rises")
	_, _, err = fakeRamp(t, 60)
	require.EqualError(t, err, "the step after window 0: 60 users; want at most 50 (the runner section's maxUsers)")
}

// A step's level, on Locust's Python: the ramp's load shape gives Locust
// the new level with its added users started over half the ramp-up, the
// window waits for Locust's spawning_complete again, and the workers get
// connectTimeout's allowance of heartbeats until the next window opens
// (the window's own, 3, before it), as before a trial's window.
func TestARampsStepRaisesTheShapesLevel(t *testing.T) {
	locust := locustPath(t)
	dir := t.TempDir()
	p := plan{Target: "http://127.0.0.1:1", Users: 40, Workers: 2, ConnectTimeout: 30, Ramp: true, RampMaxUsers: 200}
	p.Timing.RampUp, p.Timing.Runtime, p.Timing.RampDown = 4, 6, 1
	src, err := p.render()
	require.NoError(t, err)
	writeFile(t, filepath.Join(dir, "softalloc_locustfile.py"), src)
	writeFile(t, filepath.Join(dir, "drive.py"), `import types
import locust.runners
import softalloc_locustfile as lf

shape = lf.SoftallocRamp()
print(shape.tick())
env = types.SimpleNamespace(runner=None, parsed_options=types.SimpleNamespace(softalloc_out="", softalloc_began=0))
m = lf._Master(env)
m.spawned = True
lf._liveness(lf._WINDOW_LIVENESS)
m.rise(40, 100)
print(shape.tick(), m.spawned, locust.runners.HEARTBEAT_LIVENESS)
`)
	cmd := osexec.Command(filepath.Join(filepath.Dir(locust), "python"), "drive.py")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "(40, 20.0)\n(100, 30.0) False 30\n", string(out))
}

// The same experiment run again (a campaign without a journal) gets the
// same attempt directory: its windows are its own, not the files an
// earlier run left there. (An earlier run's window-0.json was read at once
// as this run's first window, and its step-0.json by the master as this
// run's first step.)
func TestARampInAnEarlierRunsDirectoryReadsOnlyItsOwnWindows(t *testing.T) {
	dir := t.TempDir()
	_, _, err := fakeRampIn(t, dir, 30, 40, 0)
	require.NoError(t, err)
	wins, run, err := fakeRampIn(t, dir, 20, 0)
	require.NoError(t, err)
	require.Len(t, wins, 2)
	assert.Equal(t, 10, wins[0].Users)
	assert.Equal(t, 20, wins[1].Users)
	_, err = os.Stat(filepath.Join(run, "window-2.json"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the earlier run's third window is gone")
}

// A worker that ends mid-ramp (here killed once window 1 is written) fails
// the run at once, naming it and the window it ended before; the windows
// measured before it, window 1 included, are handed on, none after.
func TestAWorkerThatEndsMidRampNamesTheWindowAndKeepsTheOnesBefore(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "die"), "2@local 1")
	wins, _, err := fakeRampIn(t, dir, 10, 10, 0)
	require.Error(t, err)
	assert.Regexp(t, `^worker 2@local was killed \(killed\) [0-9.]+ s into the ramp, at 10 users before window 2 ended: `+
		`the other workers' users are not the level's load, so the ramp cannot go on in this run; windows 0 to 1 before it stand \(last output: `, err.Error())
	require.Len(t, wins, 2)
	assert.Equal(t, []int{0, 1}, []int{wins[0].Index, wins[1].Index})
}

// On Locust's Python, against a fake runner: the master fails a ramp at
// once, naming the worker, when a worker of the last window quits or goes
// missing before the next window opens, or while it awaits the step, and
// when the users running drop in a window (the workers report them every
// few seconds); a window that opens with fewer workers than the run's
// (Locust moved the others' users to them) names those gone. This is the
// master's own view, for a worker whose process softalloc-locust does not
// hold (ssh to a host that went away).
func TestTheMasterNamesAWorkerThatLeftTheRamp(t *testing.T) {
	locust := locustPath(t)
	dir := t.TempDir()
	p := plan{Target: "http://127.0.0.1:1", Users: 4, Workers: 2, ConnectTimeout: 5, Ramp: true, RampMaxUsers: 20}
	p.Timing.RampUp, p.Timing.Runtime, p.Timing.RampDown = 0.4, 1, 1
	src, err := p.render()
	require.NoError(t, err)
	writeFile(t, filepath.Join(dir, "softalloc_locustfile.py"), src)
	writeFile(t, filepath.Join(dir, "drive.py"), `import time, types
import gevent
import softalloc_locustfile as lf

class Worker:
    def __init__(self, id):
        self.id, self.user_count, self.state, self.heartbeat = id, 2, "running", 3

class Runner:
    def __init__(self):
        self.state, self.exceptions = "running", {}
        self.clients = types.SimpleNamespace(all=[Worker("a"), Worker("b")])

    @property
    def user_count(self):
        return sum(c.user_count for c in self.clients.all)

    def send_message(self, *a):
        pass

def master():
    env = types.SimpleNamespace(runner=Runner(), parsed_options=types.SimpleNamespace(softalloc_out="", softalloc_began=time.time()))
    m = lf._Master(env)
    m.names = {"a": "1@local", "b": "2@local"}
    m.spawned, m.roster = True, ["a", "b"]
    return m

def attempt(f, *a):
    try:
        f(*a)
        return "no error"
    except lf._Failed as e:
        return str(e)

def later(f):
    def g():
        gevent.sleep(0.2)
        f()
    gevent.spawn(g)

# The step to 6 users: worker b quits (Locust would start its users on a).
m = master()
later(lambda: m.runner.clients.all.pop())
print(attempt(m.open_when_running, time.time(), 6, time.time()))
# Worker b goes missing instead.
m = master()
later(lambda: setattr(m.runner.clients.all[1], "state", "missing"))
print(attempt(m.open_when_running, time.time(), 6, time.time()))
# In the window of 4 users, b's users stop.
m = master()
later(lambda: setattr(m.runner.clients.all[1], "user_count", 0))
print(attempt(m.measure, time.time(), 4))
# In the window, b quits.
m = master()
later(lambda: m.runner.clients.all.pop())
print(attempt(m.measure, time.time(), 4))
# b quit before the window opened: Locust moved its users to a.
m = master()
m.runner.clients.all.pop()
m.runner.clients.all[0].user_count = 4
print(attempt(m.measure, time.time(), 4))
# After window 0, awaiting the step: b's users stop.
m = master()
later(lambda: setattr(m.runner.clients.all[1], "user_count", 0))
print(attempt(m.await_step, "no-such-step.json", 0, 4))
`)
	// A master that does not see the worker leave waits for ever.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, filepath.Join(filepath.Dir(locust), "python"), "drive.py")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 6, "%s", out)
	assert.Regexp(t, `^worker 2@local quit 0\.[0-9] s after the step to 6 users, before its window opened$`, lines[0])
	assert.Regexp(t, `^worker 2@local stopped answering the master's heartbeats 0\.[0-9] s after the step to 6 users, before its window opened$`, lines[1])
	assert.Regexp(t, `^2 of 4 users were running 0\.[0-9] s into the measured window \(1@local 2, 2@local 0\)$`, lines[2])
	assert.Regexp(t, `^worker 2@local quit 0\.[0-9] s into the measured window of 4 users$`, lines[3])
	assert.Equal(t, "1 of 2 workers running when the window opened (1@local); gone: 2@local: the users ran on the workers left", lines[4])
	assert.Equal(t, "2 of 4 users were running after window 0, awaiting the step (1@local 2, 2@local 0)", lines[5])
}
