"""softalloc's locustfile: the closed-loop users of a workload file, and the
statistics of one measured window, for the softalloc-locust exec program.

softalloc-locust writes a copy of this file with PLAN filled in (the
workload's pages, transitions, think time and the trial's timing) and starts
a headless master on it; the workers get it from the master (locust -f -).

Each user walks the workload's chain as softalloc's live runner does: it
fetches a page and its embedded paths one after another (a page's time ends
with its last request), thinks (negative exponential, a draw over the cap
is 0), and moves on. Every page is one sample of Locust's own statistics
(a StatsEntry: response times kept as Locust keeps them, rounded to about two
significant digits), recorded on the worker only between the master's
"open" and "close" messages: the ramps are not in them. At "close" each
worker sends its entry to the master, which merges them with Locust's own
StatsEntry.extend and writes them, per worker and merged, to the file named
by --softalloc-out.

A ramp (PLAN["ramp"], exec protocol version 2) is one run whose users rise
level by level without a reset: Locust's own load shape (SoftallocRamp, a
LoadTestShape) holds the level, and Locust's master moves the workers to it
(runner.start on a running test adds users and keeps the running ones and
the statistics). Each level's window is measured as a trial's is and
written to window-<i>.json beside --softalloc-out; the master then waits
for softalloc-locust's step-<i>.json: the next level, the same one (another
window), or 0 to end the run.
"""

import json
import logging
import os
import random
import re
import socket
import time

import itertools

import gevent
import locust.runners
from locust import LoadTestShape, events, task
from locust.contrib.fasthttp import FastHttpUser
from locust.runners import STATE_STOPPED, STATE_STOPPING, MasterRunner, WorkerRunner
from locust.stats import RequestStats, StatsEntry

PLAN = None  # softalloc-locust: the plan

# The path templates of internal/workload: {rand:LO:HI} and {pick:a|b}.
_PLACEHOLDER = re.compile(r"\{(rand|pick):([^}]*)\}")
_BACK, _END = -1, -2
_MAX_HISTORY = 64  # as the live runner: deeper Backs are vanishingly rare
_HEADERS = {"Accept-Encoding": "identity"}
# Each user's number on its worker: with the trial and the worker in its
# User-Agent, it tells the users apart in an access log, where they all come
# from a few addresses (softalloc workload --from-log keys sessions on the
# address and the User-Agent), as the live runner's users name themselves.
_USERS = itertools.count()


def _render(path, rng):
    def draw(m):
        if m.group(1) == "rand":
            lo, hi = m.group(2).split(":")
            return str(rng.randint(int(lo), int(hi)))
        return rng.choice(m.group(2).split("|"))

    return _PLACEHOLDER.sub(draw, path)


@events.init_command_line_parser.add_listener
def _arguments(parser):
    parser.add_argument("--softalloc-out", default="", help="the master writes the window's statistics here (JSON)")
    parser.add_argument("--softalloc-worker", default="", help="this worker's name, for the master's messages")
    parser.add_argument("--softalloc-began", type=float, default=0.0,
                        help="the master's start, Unix seconds: its users must run by connectTimeout + half the ramp-up after it")


class Visitor(FastHttpUser):
    """One emulated user of the workload."""

    host = PLAN["target"] if PLAN else None
    network_timeout = PLAN["requestTimeout"] if PLAN else 60.0
    connection_timeout = PLAN["requestTimeout"] if PLAN else 60.0

    def on_start(self):
        self.headers = dict(_HEADERS)
        self.headers["User-Agent"] = "softalloc-locust (trial %s; worker %s; user %d)" % (
            PLAN.get("trial", "") if PLAN else "", _window["worker"] or _label(self.environment), next(_USERS))
        self.rng = random.Random()
        self.history = []
        self.steps = 0
        self.state = PLAN["start"]
        self.asleep, self.asked = None, 0.0

    def wait_time(self):
        t = self.rng.expovariate(1.0) * PLAN["think"]["mean"]
        cap = PLAN["think"]["cap"]
        self.asked = 0.0 if cap > 0 and t > cap else t
        self.asleep = time.perf_counter()
        return self.asked

    @task
    def page(self):
        page = PLAN["pages"][self.state]
        began = time.perf_counter()
        if self.asleep is not None:
            _thought(began - self.asleep, self.asked)
        cause = None
        for path in [page["path"]] + page["embedded"]:
            cause = self._get(_render(path, self.rng))
            if cause:
                break
        _record(page["name"], (time.perf_counter() - began) * 1000, cause)
        self._step(page)

    def _get(self, path):
        """Fetches path; returns None, or the cause of its failure."""
        # As the live runner: no compressed answers, no redirects followed.
        r = self.client.get(path, name="GET", allow_redirects=False, headers=self.headers)
        err = getattr(r, "error", None)  # only an ErrorResponse (no answer) has one
        if err is None and 0 < r.status_code < 400:
            return None
        if r.status_code >= 500:
            return "serverErrors"
        if isinstance(err, ConnectionRefusedError):
            return "refused"
        if isinstance(err, (TimeoutError, socket.timeout, gevent.Timeout)):
            return "timedOut"
        return "other"

    def _step(self, page):
        self.steps += 1
        if PLAN["sessionLength"] and self.steps >= PLAN["sessionLength"]:
            self._begin()
            return
        x = self.rng.random()
        to = self.state
        for c, t in zip(page["cum"], page["to"]):
            if x < c:
                to = t
                break
        if to == _END:
            self._begin()
        elif to == _BACK:
            if self.history:
                self.state = self.history.pop()
        else:
            if len(self.history) == _MAX_HISTORY:
                self.history.pop(0)
            self.history.append(self.state)
            self.state = to

    def _begin(self):
        self.state, self.history, self.steps = PLAN["start"], [], 0


# ---- the window, on a worker ----

_window = {"stats": None, "errors": {}, "users": 0, "opened": 0.0, "cpu": 0.0, "worker": "",
           "think": [0, 0.0, 0.0]}


def _thought(slept, asked):
    # The think time slept, against the one drawn: a busy worker wakes late,
    # and the response time law holds with the time slept.
    if _window["stats"] is not None:
        t = _window["think"]
        t[0], t[1], t[2] = t[0] + 1, t[1] + slept, t[2] + asked


def _record(name, ms, cause):
    stats = _window["stats"]
    if stats is None:
        return
    if cause:
        stats.log_error("PAGE", name, cause)
        _window["errors"][cause] = _window["errors"].get(cause, 0) + 1
    else:
        stats.log_request("PAGE", name, ms, 0)


def _on_open(environment, msg, **_):
    _window.update(stats=RequestStats(use_response_times_cache=False), errors={}, think=[0, 0.0, 0.0],
                   users=environment.runner.user_count, opened=time.time(), cpu=time.process_time())


def _on_close(environment, msg, **_):
    stats, _window["stats"] = _window["stats"], None
    reply = {"worker": _window["worker"], "usersAtOpen": _window["users"],
             "usersAtClose": environment.runner.user_count, "errors": _window["errors"]}
    if stats is None:
        reply["problem"] = "got close without open"
    else:
        reply["seconds"] = time.time() - _window["opened"]
        # The worker's own CPU over the window, in cores: one process uses
        # at most one (gevent), so near 1 it cannot keep its users' pace.
        reply["cpu"] = (time.process_time() - _window["cpu"]) / reply["seconds"]
        reply["total"] = stats.total.serialize()
        reply["pages"] = {name: e.num_requests for (name, _), e in stats.entries.items()}
        reply["thinks"], reply["thinkSeconds"], reply["thinkAsked"] = _window["think"]
    environment.runner.send_message("softalloc_window", reply)


def _label(environment):
    # Read at init: the master's options replace the worker's own at spawn.
    opts = environment.parsed_options
    return (opts.softalloc_worker if opts and opts.softalloc_worker else "") or socket.gethostname()


# ---- the window, on the master ----


# Locust's master marks a worker missing once it has missed this many
# heartbeats (1 s apart). In the window it stands: a worker that silent
# cannot keep its users' pace. Before it, workers starved on a busy machine
# missed them while their users started (both at once, 4 s into the test),
# and Locust moves a missing worker's users to the others or stops the test;
# so until the window opens the allowance is connectTimeout's, as for the
# workers' start. The master reads the module's value at each heartbeat.
_WINDOW_LIVENESS = locust.runners.HEARTBEAT_LIVENESS


def _liveness(n):
    locust.runners.HEARTBEAT_LIVENESS = n


class _Master:
    def __init__(self, environment):
        self.env = environment
        self.runner = environment.runner
        self.out = environment.parsed_options.softalloc_out
        self.names = {}  # client id -> worker name
        self.replies = {}
        self.clock = None
        self.began = environment.parsed_options.softalloc_began or time.time()
        self.spawned = False  # Locust's spawning_complete fired
        # A ramp's workers of the last window (client ids): a later level's
        # users must run on all of them, not on the ones left.
        self.roster = None

    def spawning_complete(self, **_):
        self.spawned = True

    def hello(self, environment, msg, **_):
        self.names[msg.node_id] = msg.data["worker"]
        # Written as they come, so that softalloc-locust can name the
        # workers that never connected if the master gives up waiting.
        with open(self.out + ".workers", "a") as f:
            f.write(json.dumps({"worker": msg.data["worker"], "clientId": msg.node_id, "pid": msg.data["pid"]}) + "\n")

    def window(self, environment, msg, **_):
        self.replies[msg.node_id] = msg.data

    def start(self, **_):
        if self.clock is None:
            self.clock = gevent.spawn(self.run)

    def name(self, cid):
        return self.names.get(cid, cid)

    def split(self):
        """Each worker's running users, for messages."""
        return ", ".join(sorted("%s %d" % (self.name(c.id), c.user_count) for c in self.runner.clients.all))

    def running(self, users):
        """Every user runs: Locust's master has dispatched them all
        (spawning_complete) and the workers report them running. It fires
        spawning_complete after waiting a second for the workers' reports,
        whether or not they came, so the reports are counted as well."""
        return self.spawned and self.runner.user_count >= users

    def open_when_running(self, start, users=None, step=None, settle=True):
        """Waits to open the window, as the live runner's generator does: until
        every user runs and the ramp-up has passed since the test's start, and
        then at least half the ramp-up more, so that queues settle after the
        last user's start. On a busy machine the workers start their users
        seconds late, and a window opened at a fixed time from the test's start
        had none of them. The users must run by connectTimeout + half the
        ramp-up from the master's start (their nominal start plus
        connectTimeout, the one allowance for Locust's start, the workers'
        connections and their users' start together), so the window opens by
        connectTimeout + ramp-up from it: a trial lasts at most as long as it
        could before, and within the exec runner's default timeout.

        A ramp's later level (users) waits the same way, from step (the time
        of the step to it) rather than the test's start; another window at
        the same level (settle False) opens as soon as its users run."""
        t = PLAN["timing"]
        if users is None:
            users = PLAN["users"]
        origin, what = self.began, "the master's start"
        if step is not None:
            origin, what = step, "the step to %d users" % users
        due = origin + PLAN["connectTimeout"] + t["rampUp"] / 2
        while True:
            if self.roster is not None:
                # A worker of the last window that quit or went missing: Locust
                # would start its users on the others, whose load is then read
                # as the level's. (Missing takes connectTimeout's heartbeats
                # here; a worker process that ends is seen at once by
                # softalloc-locust.)
                gone = self.lost(self.roster)
                if gone:
                    raise _Failed("%s %.1f s after %s, before its window opened" % (
                        _workers(gone), time.time() - origin, what))
            if self.running(users):
                break
            if self.runner.state in (STATE_STOPPED, STATE_STOPPING):
                raise _Failed("Locust stopped the test %.1f s in, before the window opened, with %d of %d users "
                              "running; see the master's log" % (time.time() - start, self.runner.user_count,
                                                                 users))
            if time.time() >= due:
                split = self.split()
                raise _Failed("%d of %d users were running %.1f s after %s (%s), past connectTimeout "
                              "%g s + half the ramp-up: the workers did not start them in time" % (
                                  self.runner.user_count, users, time.time() - origin, what,
                                  split or "no workers", PLAN["connectTimeout"]))
            gevent.sleep(0.05)
        ready = time.time()
        logging.info("softalloc: all %d users running %.1f s into the test" % (users, ready - start))
        if settle:
            since = start if step is None else step
            gevent.sleep(max(0.0, max(since + t["rampUp"], ready + t["rampUp"] / 2) - time.time()))

    def lost(self, expected):
        """The workers of expected that are gone or missing: each named, and
        how it left."""
        present = {c.id: c for c in self.runner.clients.all}
        gone = []
        for c in expected:
            if c not in present:
                gone.append("%s quit" % self.name(c))
            elif present[c].state == "missing":
                gone.append("%s stopped answering the master's heartbeats" % self.name(c))
        return sorted(gone)

    def measure(self, start, users):
        """Measures one window of users (every one running: open_when_running
        returned) and returns its statistics, the workers' merged by Locust."""
        t = PLAN["timing"]
        result = {"users": users, "workers": []}
        expected = [c.id for c in self.runner.clients.all if c.state != "missing"]
        if len(expected) < PLAN["workers"]:
            # Locust moved the users of the others to these.
            gone = sorted(self.name(c) for c in self.names if c not in expected)
            raise _Failed("%d of %d workers running when the window opened (%s)%s: the users ran on the workers left" % (
                len(expected), PLAN["workers"], ", ".join(sorted(self.name(c) for c in expected)) or "none",
                "; gone: " + ", ".join(gone) if gone else ""))
        _liveness(_WINDOW_LIVENESS)
        for c in self.runner.clients.all:
            c.heartbeat = min(c.heartbeat, _WINDOW_LIVENESS)
        self.replies = {}
        opened = time.time()
        self.runner.send_message("softalloc_open")
        logging.info("softalloc: the window opened %.1f s into the test" % (opened - start))
        while time.time() < opened + t["runtime"]:
            gevent.sleep(min(0.5, max(0.0, opened + t["runtime"] - time.time())))
            gone = self.lost(expected)
            if gone:
                raise _Failed("%s %.1f s into the measured window of %d users" % (
                    _workers(gone), time.time() - opened, users))
            if self.runner.user_count < users:
                # The workers report their users every few seconds: some stopped.
                raise _Failed("%d of %d users were running %.1f s into the measured window (%s)" % (
                    self.runner.user_count, users, time.time() - opened, self.split()))
        self.runner.send_message("softalloc_close")
        closed = time.time()
        result["window"] = {"start": opened, "end": closed, "seconds": closed - opened}
        deadline = closed + max(t["rampDown"], PLAN["replyTimeout"])
        while set(expected) - set(self.replies) and time.time() < deadline:
            gevent.sleep(0.05)
        silent = sorted(self.name(c) for c in expected if c not in self.replies)
        if silent:
            raise _Failed("worker %s sent no statistics within %.0f s of the window's end" % (
                ", ".join(silent), max(t["rampDown"], PLAN["replyTimeout"])))
        total = StatsEntry(self.runner.stats, "Aggregated", "PAGE", use_response_times_cache=False)
        errors, pages = {}, {}
        for cid in expected:
            r = self.replies[cid]
            if "problem" in r:
                raise _Failed("worker %s: %s" % (self.name(cid), r["problem"]))
            # Locust's own merge of workers' statistics.
            total.extend(StatsEntry.unserialize(r["total"], self.runner.stats))
            for k, v in r["errors"].items():
                errors[k] = errors.get(k, 0) + v
            for k, v in r["pages"].items():
                pages[k] = pages.get(k, 0) + v
            result["workers"].append(dict(r, clientId=cid))
        self.roster = expected
        result["total"] = total.serialize()
        result["errors"] = errors
        result["pages"] = pages
        if self.runner.exceptions:
            # A failing user is no emulated user: its pages are missing.
            first = next(iter(self.runner.exceptions.values()))
            raise _Failed("the users raised %d exceptions, the first: %s" % (
                sum(x["count"] for x in self.runner.exceptions.values()), first["msg"]))
        return result

    def run(self):
        if PLAN.get("ramp"):
            return self.run_ramp()
        t = PLAN["timing"]
        start = time.time()
        result = {"users": PLAN["users"], "workers": []}
        try:
            self.open_when_running(start)
            result = self.measure(start, PLAN["users"])
            # The ramp-down: the load goes on past the window, as in a live trial.
            gevent.sleep(max(0.0, result["window"]["end"] + t["rampDown"] - time.time()))
        except _Failed as e:
            result["error"] = str(e)
        except Exception as e:  # anything else must still end the run, and say why
            result["error"] = "the locustfile's window clock failed: %r" % (e,)
        _write(self.out, result)
        if "error" in result:
            self.env.process_exit_code = 3
        self.runner.quit()

    def run_ramp(self):
        """The ramp: a window per level, each written as window-<i>.json as
        it ends; the next level comes in step-<i>.json. The users of a new
        level start over half the ramp-up, and its window opens as a trial's
        does once they all run; another window at the same level opens at
        once. --softalloc-out gets {"ended": true} (or the error) last."""
        start = time.time()
        here = os.path.dirname(os.path.abspath(self.out))
        users, step, settle = PLAN["users"], None, True
        result = {"users": users, "ended": False}
        try:
            for i in itertools.count():
                self.open_when_running(start, users, step, settle)
                w = self.measure(start, users)
                w["index"], w["began"] = i, start
                _write(os.path.join(here, "window-%d.json" % i), w)
                asked = self.await_step(os.path.join(here, "step-%d.json" % i), i, users)["users"]
                if asked == 0:
                    break
                if asked != users:
                    step, settle = self.rise(users, asked), True
                    users = asked
                    logging.info("softalloc: window %d done; rising to %d users" % (i, users))
                else:
                    # The same users, already running: another window at once.
                    settle = False
            result = {"users": users, "ended": True}
        except _Failed as e:
            result["error"] = str(e)
        except Exception as e:  # anything else must still end the run, and say why
            result["error"] = "the locustfile's window clock failed: %r" % (e,)
        _write(self.out, result)
        if "error" in result:
            self.env.process_exit_code = 3
        self.runner.quit()

    def rise(self, users, asked):
        """Sets the level SoftallocRamp gives Locust to asked, its added
        users started over half the ramp-up, and returns the step's time."""
        self.spawned = False
        # The added users start: the workers get connectTimeout's allowance
        # of heartbeats again until the next window, as before the first
        # (measure() restores the window's).
        _liveness(max(_WINDOW_LIVENESS, int(PLAN["connectTimeout"])))
        _RAMP["rate"] = (asked - users) / max(PLAN["timing"]["rampUp"] / 2, 0.001)
        _RAMP["users"] = asked
        return time.time()

    def await_step(self, path, i, users):
        """Waits for softalloc-locust's step after window i of users,
        watching the workers of the window meanwhile (the load goes on)."""
        while not os.path.exists(path):
            gone = self.lost(self.roster)
            if gone:
                raise _Failed("%s after window %d, awaiting the step" % (_workers(gone), i))
            if self.runner.user_count < users:
                raise _Failed("%d of %d users were running after window %d, awaiting the step (%s)" % (
                    self.runner.user_count, users, i, self.split()))
            if self.runner.state in (STATE_STOPPED, STATE_STOPPING):
                raise _Failed("Locust stopped the test after window %d; see the master's log" % i)
            gevent.sleep(0.05)
        with open(path) as f:
            step = json.load(f)
        if not isinstance(step.get("users"), int) or step["users"] < 0:
            raise _Failed("%s: want {\"users\": N >= 0}, got %r" % (path, step))
        return step


# The ramp's level: the users SoftallocRamp asks Locust for, and the rate at
# which the last step's users start.
_RAMP = {"users": 0, "rate": 1.0}

if PLAN and PLAN.get("ramp"):
    _RAMP["users"] = PLAN["users"]
    _RAMP["rate"] = PLAN["users"] / max(PLAN["timing"]["rampUp"] / 2, 0.001)

    class SoftallocRamp(LoadTestShape):
        """Locust's own load shape for a ramp: the master asks for the level
        the window clock set (Locust's shape worker ticks every second, and
        moves the workers when the level changes, adding users to the
        running ones). The window clock ends the run itself."""

        def tick(self):
            return _RAMP["users"], _RAMP["rate"]


class _Failed(Exception):
    pass


def _workers(gone):
    """Workers that left, as lost() names them, for messages."""
    return "; ".join("worker " + g for g in gone)


def _write(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)


@events.init.add_listener
def _init(environment, runner, **_):
    if isinstance(runner, MasterRunner):
        if not environment.parsed_options.softalloc_out:
            raise SystemExit("softalloc locustfile: the master needs --softalloc-out FILE")
        m = _Master(environment)
        _liveness(max(_WINDOW_LIVENESS, int(PLAN["connectTimeout"])))
        runner.register_message("softalloc_hello", m.hello)
        runner.register_message("softalloc_window", m.window)
        environment.events.spawning_complete.add_listener(m.spawning_complete)
        environment.events.test_start.add_listener(lambda **kw: m.start())
    elif isinstance(runner, WorkerRunner):
        runner.register_message("softalloc_open", _on_open)
        runner.register_message("softalloc_close", _on_close)
        _window["worker"] = _label(environment)
        runner.send_message("softalloc_hello", {"worker": _window["worker"], "pid": os.getpid()})
