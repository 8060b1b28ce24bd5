package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
	"github.com/softalloc/softalloc/internal/wire"
)

// A program that reads the experiment and prints a valid observation: the
// runner passes the request, streams stderr, and returns the observation.
func TestRunExperimentRoundTrip(t *testing.T) {
	dir := t.TempDir()
	obs := observationJSON(t)
	// Servers in another order than the chain's: the runner reorders them.
	servers := obs["servers"].([]any)
	servers[0], servers[4] = servers[4], servers[0]
	writeFile(t, dir, "obs.json", marshal(t, obs), 0o644)
	r, log := testRunner(t, script(t, dir, `cat > "$DIR/request.json"
echo "setting pools for $SOFTALLOC_EXPERIMENT_ID" >&2
printf 'no newline at the end' >&2
cat "$DIR/obs.json"`))

	e := testExperiment()
	got, err := r.RunExperiment(context.Background(), e)
	require.NoError(t, err)
	assert.Equal(t, testObservation(), got)

	want, err := NewRequest(e)
	require.NoError(t, err)
	sent, err := os.ReadFile(filepath.Join(dir, "request.json"))
	require.NoError(t, err)
	assert.JSONEq(t, string(marshal(t, want)), string(sent))
	assert.True(t, strings.HasSuffix(string(sent), "}\n"), "one JSON object and a newline")

	id := want.ExperimentID
	assert.Contains(t, log.String(), "exec "+id+": setting pools for "+id+"\n")
	assert.Contains(t, log.String(), "exec "+id+": no newline at the end\n")
}

func TestRequest(t *testing.T) {
	e := testExperiment()
	req, err := NewRequest(e)
	require.NoError(t, err)
	assert.Equal(t, ProtocolVersion, req.ProtocolVersion)
	assert.Equal(t, 1, req.Attempt)
	assert.Equal(t, "1-2-2-u6000-a9c89d0f4139", req.ExperimentID, "the id of b67725b: a program's result directories keep their names")
	require.Len(t, req.Tiers, 3)
	assert.Equal(t, []string{"app-1", "app-2"}, req.Tiers[1].Servers)
	assert.Equal(t, wire.Pools{Threads: 150, Connections: 60}, req.Tiers[1].Pools)
	assert.Equal(t, wire.Pools{}, req.Tiers[2].Pools)
	assert.Equal(t, wire.FromExperiment(e).Allocation, req.Allocation)

	// Stable, and different for anything that defines the experiment.
	again, err := ExperimentID(testExperiment())
	require.NoError(t, err)
	assert.Equal(t, req.ExperimentID, again)
	for name, change := range map[string]func(*algorithms.Experiment){
		"allocation": func(e *algorithms.Experiment) {
			e.Allocation = algorithms.Allocation{"web": {Threads: 400}, "app": {Threads: 150, Connections: 61}}
		},
		"users":    func(e *algorithms.Experiment) { e.Workload.Users++ },
		"timing":   func(e *algorithms.Experiment) { e.Timing.Runtime++ },
		"replicas": func(e *algorithms.Experiment) { e.Deployment.Tiers[2].Replicas++ },
	} {
		e := testExperiment()
		change(&e)
		id, err := ExperimentID(e)
		require.NoError(t, err)
		assert.NotEqual(t, req.ExperimentID, id, name)
	}

	_, err = NewRequest(algorithms.Experiment{Deployment: e.Deployment, Allocation: algorithms.Allocation{}, Workload: e.Workload, Timing: e.Timing})
	assert.ErrorContains(t, err, `tier "web": allocation sets no threads pool size`)
}

func TestTimeout(t *testing.T) {
	dir := t.TempDir()
	r, log := testRunner(t, script(t, dir, `exec sleep 300`))
	r.Timeout = 100 * time.Millisecond
	start := time.Now()
	_, err := r.RunExperiment(context.Background(), testExperiment())
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrTimeout)
	assert.ErrorContains(t, err, "attempt 1 of 1: timed out after 100ms")
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Contains(t, log.String(), "timed out after 100ms; stopping the program's process group")
}

func TestDefaultTimeout(t *testing.T) {
	// The paper's 20.5-minute trial gets 10% and a minute more.
	assert.Equal(t, 20*time.Minute+30*time.Second+2*time.Minute+3*time.Second+time.Minute, DefaultTimeout(algorithms.PaperTiming))
}

func TestNonZeroExitQuotesStderrTail(t *testing.T) {
	dir := t.TempDir()
	r, _ := testRunner(t, script(t, dir, `cat >/dev/null
i=1
while [ $i -le 30 ]; do echo "line $i" >&2; i=$((i+1)); done
echo '{"half an observation":' 
exit 3`))
	_, err := r.RunExperiment(context.Background(), testExperiment())
	require.Error(t, err)
	var ee *osexec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, ee.ExitCode())
	msg := err.Error()
	assert.Contains(t, msg, "program failed: exit status 3; stderr (last 20 lines): line 11 | line 12 |")
	assert.True(t, strings.HasSuffix(msg, "| line 30"), msg)
	assert.NotContains(t, msg, "line 10 |")
}

func TestGarbageOutput(t *testing.T) {
	dir := t.TempDir()
	r, _ := testRunner(t, script(t, dir, `cat >/dev/null; echo "Throughput: 780 pages/s"`))
	_, err := r.RunExperiment(context.Background(), testExperiment())
	require.Error(t, err)
	assert.ErrorContains(t, err, `stdout is not a JSON observation: invalid character 'T' looking for beginning of value; stdout began "Throughput: 780 pages/s"`)
}

// runWith runs a script printing obs and returns the runner's error.
func runWith(t *testing.T, obs []byte) error {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "obs.json", obs, 0o644)
	r, _ := testRunner(t, script(t, dir, `cat >/dev/null; cat "$DIR/obs.json"`))
	_, err := r.RunExperiment(context.Background(), testExperiment())
	return err
}

func TestMissingFieldIsNamed(t *testing.T) {
	err := runWith(t, marshal(t, set(t, observationJSON(t), "servers.1.cpu", nil)))
	require.Error(t, err)
	var inv *InvalidObservationError
	require.ErrorAs(t, err, &inv)
	assert.Equal(t, []string{"observation.servers[1].cpu: missing; want a number in [0,1]"}, inv.Problems)
}

func TestWrongTypeIsNamedWithRawValue(t *testing.T) {
	err := runWith(t, marshal(t, set(t, observationJSON(t), "servers.2.cpu", "95%")))
	require.Error(t, err)
	var inv *InvalidObservationError
	require.ErrorAs(t, err, &inv)
	assert.Equal(t, []string{`observation.servers[2].cpu: want a number in [0,1], got "95%"`}, inv.Problems)
	assert.Contains(t, err.Error(), `invalid observation: observation.servers[2].cpu: want a number in [0,1], got "95%"`)
}

// The whole validation, without processes: each case breaks one thing.
func TestParseObservation(t *testing.T) {
	tests := []struct {
		name string
		edit func(t *testing.T, m map[string]any) map[string]any
		raw  string // used instead of the edited map when set
		want []string
	}{
		{name: "unknown field", edit: func(t *testing.T, m map[string]any) map[string]any {
			return set(t, m, "servers.0.cpuu", 0.5)
		}, want: []string{"observation.servers[0].cpuu: unknown field; want one of name, tier, cpu, resources, pools, throughput, responseTime, gcShare, throttled, cpuHalfWidth"}},
		{name: "integer with a fraction", edit: func(t *testing.T, m map[string]any) map[string]any {
			return set(t, m, "servers.1.pools.0.size", 150.5)
		}, want: []string{"observation.servers[1].pools[0].size: want an integer >= 0, got 150.5"}},
		{name: "null", edit: func(t *testing.T, m map[string]any) map[string]any {
			m["throughput"] = json.RawMessage("null")
			return m
		}, want: []string{"observation.throughput: want a number >= 0, got null"}},
		{name: "several problems at once", edit: func(t *testing.T, m map[string]any) map[string]any {
			set(t, m, "responseTimes.buckets.1.count", "1000")
			set(t, m, "servers.3.name", nil)
			return set(t, m, "protocolVersion", nil)
		}, want: []string{
			"observation.protocolVersion: missing; want the integer 1 or 2",
			`observation.responseTimes.buckets[1].count: want an integer >= 0, got "1000"`,
			"observation.servers[3].name: missing; want a non-empty string",
		}},
		{name: "resource", edit: func(t *testing.T, m map[string]any) map[string]any {
			return set(t, m, "servers.4.resources.disk", true)
		}, want: []string{"observation.servers[4].resources.disk: want a number in [0,1], got true"}},
		{name: "out of range, from Observation.Validate", edit: func(t *testing.T, m map[string]any) map[string]any {
			return set(t, m, "servers.2.cpu", 95)
		}, want: []string{"observation.servers[2].cpu: want a number in [0,1], got 95"}},
		{name: "other version", edit: func(t *testing.T, m map[string]any) map[string]any {
			return set(t, m, "protocolVersion", 2)
		}, want: []string{"observation.protocolVersion: want 1, the experiment's, got 2"}},
		{name: "negative errors", edit: func(t *testing.T, m map[string]any) map[string]any {
			return set(t, m, "errors", -1)
		}, want: []string{"observation.errors: want an integer >= 0, got -1"}},
		{name: "unknown server", edit: func(t *testing.T, m map[string]any) map[string]any {
			return set(t, m, "servers.4.name", "db-3")
		}, want: []string{
			`observation.servers[4].name: unknown server "db-3"; the deployment has web-1, app-1, app-2, db-1, db-2`,
			"observation.servers: missing db-2 (want one entry for each of web-1, app-1, app-2, db-1, db-2)",
		}},
		{name: "duplicate server", edit: func(t *testing.T, m map[string]any) map[string]any {
			return set(t, m, "servers.2.name", "app-1")
		}, want: []string{
			`observation.servers[2].name: server "app-1" already reported at servers[1]`,
			"observation.servers: missing app-2 (want one entry for each of web-1, app-1, app-2, db-1, db-2)",
		}},
		{name: "wrong tier", edit: func(t *testing.T, m map[string]any) map[string]any {
			return set(t, m, "servers.3.tier", "app")
		}, want: []string{`observation.servers[3].tier: want "db" (the tier of db-1), got "app"`}},
		{name: "allocation not applied", edit: func(t *testing.T, m map[string]any) map[string]any {
			return set(t, m, "servers.0.pools.0.size", 512)
		}, want: []string{"observation.servers[0].pools[0].size: want 400 (the allocation's web threads), got 512; was the allocation applied?"}},
		{name: "histogram counts that overflow", edit: func(t *testing.T, m map[string]any) map[string]any {
			set(t, m, "responseTimes.buckets.0.count", int64(1)<<49)
			return set(t, m, "responseTimes.buckets.1.count", int64(math.MaxInt64))
		}, want: []string{"observation.responseTimes.buckets[1].count: want an integer >= 0 that keeps the total at most 1125899906842624, got 9223372036854775807"}},
		{name: "an integer beyond 64 bits", edit: func(t *testing.T, m map[string]any) map[string]any {
			m["drops"] = json.Number("99999999999999999999")
			return m
		}, want: []string{"observation.drops: want an integer of at most 64 bits, got 99999999999999999999"}},
		{name: "empty stdout", raw: " \n", want: nil},
		{name: "two values", raw: `{"a": 1} {"b": 2}`, want: nil},
		{name: "an array", raw: `[1, 2]`, want: []string{"observation: want an object, got [1,2]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.raw)
			if tt.edit != nil {
				data = marshal(t, tt.edit(t, observationJSON(t)))
			}
			_, err := ParseObservation(data, testExperiment())
			require.Error(t, err)
			var inv *InvalidObservationError
			if tt.want == nil {
				assert.False(t, errors.As(err, &inv), "want a parse error, got %v", err)
				return
			}
			require.ErrorAs(t, err, &inv)
			assert.Equal(t, tt.want, inv.Problems)
		})
	}
}

func TestOptionalFieldsMayBeOmitted(t *testing.T) {
	m := observationJSON(t)
	for _, k := range []string{"drops", "retries", "errors"} {
		delete(m, k)
	}
	set(t, m, "servers.0.pools", nil)
	got, err := ParseObservation(marshal(t, m), testExperiment())
	require.NoError(t, err)
	assert.Zero(t, got.Drops)
	assert.Empty(t, got.Servers[0].Pools)
}

// A hung program that ignores SIGTERM, with a child that inherits that:
// after the grace period both die of SIGKILL, and no process is left.
func TestHungChildIgnoringSIGTERMIsKilled(t *testing.T) {
	dir := t.TempDir()
	r, log := testRunner(t, script(t, dir, `trap '' TERM
sleep 300 &
echo $! > "$DIR/child.tmp" && mv "$DIR/child.tmp" "$DIR/child.pid"
echo $$ > "$DIR/leader.tmp" && mv "$DIR/leader.tmp" "$DIR/leader.pid"
wait`))
	r.Grace = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.RunExperiment(ctx, testExperiment())
		done <- err
	}()
	leader, child := readPID(t, filepath.Join(dir, "leader.pid")), readPID(t, filepath.Join(dir, "child.pid"))
	cancel()
	stopped := time.Now()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
		assert.GreaterOrEqual(t, time.Since(stopped), r.Grace, "SIGTERM alone cannot have stopped it")
	case <-time.After(10 * time.Second):
		t.Fatal("RunExperiment did not return after SIGKILL")
	}
	requireGone(t, leader, child)
	assert.Contains(t, log.String(), "sending SIGKILL to its process group")
}

// Ctrl-C during a trial: the group gets SIGTERM at once, the call returns
// context.Canceled promptly (well before the grace period), and nothing is
// retried.
func TestCancelDuringTrialStopsTheGroup(t *testing.T) {
	dir := t.TempDir()
	r, _ := testRunner(t, script(t, dir, `echo x >> "$DIR/attempts"
sleep 300 &
echo $! > "$DIR/child.tmp" && mv "$DIR/child.tmp" "$DIR/child.pid"
echo $$ > "$DIR/leader.tmp" && mv "$DIR/leader.tmp" "$DIR/leader.pid"
wait`))
	r.Grace, r.Retries = time.Minute, 3
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.RunExperiment(ctx, testExperiment())
		done <- err
	}()
	leader, child := readPID(t, filepath.Join(dir, "leader.pid")), readPID(t, filepath.Join(dir, "child.pid"))
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
		assert.NotErrorIs(t, err, ErrTimeout)
	case <-time.After(10 * time.Second):
		t.Fatal("RunExperiment did not return promptly after cancellation")
	}
	requireGone(t, leader, child)
	attempts, err := os.ReadFile(filepath.Join(dir, "attempts"))
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(attempts), "a cancelled trial is not retried")
}

// Fails (exit 1), then prints garbage, then succeeds: three attempts, the
// waits between them doubling.
func TestRetriesWithBackoff(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "obs.json", marshal(t, observationJSON(t)), 0o644)
	r, log := testRunner(t, script(t, dir, `cat > "$DIR/request-$SOFTALLOC_ATTEMPT.json"
echo x >> "$DIR/attempts"
n=$(wc -l < "$DIR/attempts")
case $n in
1) echo "ssh: connect to host app-1: Connection refused" >&2; exit 1 ;;
2) echo "oops" ;;
*) cat "$DIR/obs.json" ;;
esac`))
	r.Retries, r.Backoff, r.MaxBackoff = 5, 10*time.Second, time.Minute
	var waits []time.Duration
	r.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	got, err := r.RunExperiment(context.Background(), testExperiment())
	require.NoError(t, err)
	assert.Equal(t, testObservation(), got)
	attempts, err := os.ReadFile(filepath.Join(dir, "attempts"))
	require.NoError(t, err)
	assert.Equal(t, "x\nx\nx\n", string(attempts))
	assert.Equal(t, []time.Duration{10 * time.Second, 20 * time.Second}, waits)
	assert.Contains(t, log.String(), "attempt 1 of 6 failed: program failed: exit status 1; stderr (last 1 lines): ssh: connect to host app-1: Connection refused; retrying in 10s")
	assert.Contains(t, log.String(), "attempt 2 of 6 failed: stdout is not a JSON observation")

	// Each attempt says which it is; the id stays.
	var first, third Request
	require.NoError(t, json.Unmarshal(mustRead(t, filepath.Join(dir, "request-1.json")), &first))
	require.NoError(t, json.Unmarshal(mustRead(t, filepath.Join(dir, "request-3.json")), &third))
	assert.Equal(t, 1, first.Attempt)
	assert.Equal(t, 3, third.Attempt)
	assert.Equal(t, first.ExperimentID, third.ExperimentID)
}

func TestRetriesExhausted(t *testing.T) {
	dir := t.TempDir()
	r, _ := testRunner(t, script(t, dir, `echo x >> "$DIR/attempts"; echo "no such host" >&2; exit 2`))
	r.Retries = 2
	_, err := r.RunExperiment(context.Background(), testExperiment())
	require.Error(t, err)
	assert.Regexp(t, `^exec .*trial.sh, experiment 1-2-2-u6000-[0-9a-f]{12}: attempt 3 of 3: program failed: exit status 2; stderr \(last 1 lines\): no such host$`, err.Error())
	assert.Equal(t, "x\nx\nx\n", string(mustRead(t, filepath.Join(dir, "attempts"))))
}

func TestBackoffIsCapped(t *testing.T) {
	r := &Runner{Backoff: time.Second, MaxBackoff: 5 * time.Second}
	var got []time.Duration
	for a := 1; a <= 5; a++ {
		got = append(got, r.backoff(a))
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}, got)
}

// A program that exits leaving a process behind (holding stdout, even):
// the result comes back and the leftover is stopped.
func TestLeftoverProcessesAreStopped(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "obs.json", marshal(t, observationJSON(t)), 0o644)
	r, log := testRunner(t, script(t, dir, `cat >/dev/null
sleep 300 &
echo $! > "$DIR/child.pid"
cat "$DIR/obs.json"`))
	got, err := r.RunExperiment(context.Background(), testExperiment())
	require.NoError(t, err)
	assert.Equal(t, testObservation(), got)
	requireGone(t, readPID(t, filepath.Join(dir, "child.pid")))
	assert.Contains(t, log.String(), "left processes in its group; stopping them")
}

func TestStdoutIsBounded(t *testing.T) {
	dir := t.TempDir()
	r, _ := testRunner(t, script(t, dir, `cat >/dev/null; i=0; while [ $i -lt 100 ]; do echo "0123456789"; i=$((i+1)); done`))
	r.stdoutLimit = 100
	_, err := r.RunExperiment(context.Background(), testExperiment())
	assert.ErrorContains(t, err, "stdout: more than 100 bytes")
}

func TestNew(t *testing.T) {
	_, err := New(nil)
	assert.ErrorContains(t, err, "want --runner-cmd PROGRAM")
	_, err = New([]string{"./no-such-program"})
	assert.ErrorContains(t, err, `program "./no-such-program"`)
	r, err := New([]string{"sh", "-c", "exit 0"})
	require.NoError(t, err)
	assert.Equal(t, []string{"sh", "-c", "exit 0"}, r.Command)
}

// The experiment is data on stdin, never a command line: values that a
// shell would interpret reach the program untouched.
func TestNoShellBetweenRunnerAndProgram(t *testing.T) {
	dir := t.TempDir()
	e := testExperiment()
	e.Deployment.Topology = "$(touch " + filepath.Join(dir, "pwned") + ")"
	r, _ := testRunner(t, script(t, dir, `cat > "$DIR/request.json"; exit 1`), "it's; $HOME")
	_, err := r.RunExperiment(context.Background(), e)
	require.Error(t, err)
	assert.NoFileExists(t, filepath.Join(dir, "pwned"))
	var req Request
	require.NoError(t, json.Unmarshal(mustRead(t, filepath.Join(dir, "request.json")), &req))
	assert.Equal(t, e.Deployment.Topology, req.Topology)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// Concurrent experiments share the log without tearing lines.
func TestConcurrentExperiments(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "obs.json", marshal(t, observationJSON(t)), 0o644)
	r, log := testRunner(t, script(t, dir, `cat >/dev/null; for i in 1 2 3 4 5; do echo "progress $i of $SOFTALLOC_EXPERIMENT_ID" >&2; done
cat "$DIR/obs.json"`))
	const n = 4
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			e := testExperiment()
			e.Workload.Users += i
			_, err := r.RunExperiment(context.Background(), e)
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		require.NoError(t, <-errs)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	require.Len(t, lines, 5*n)
	for _, l := range lines {
		assert.Regexp(t, `^exec (\S+): progress [1-5] of (\S+)$`, l)
		f := strings.Fields(l)
		assert.Equal(t, strings.TrimSuffix(f[1], ":"), f[len(f)-1], fmt.Sprint("prefix and content agree: ", l))
	}
}

// observationJSONForShape fills every optional field so both directions are
// exercised.
func observationJSONForShape(t *testing.T) any {
	o := testObservation()
	o.Errors = 1
	o.Servers[1].Throttled = 0.5
	// An adaptive trial's intervals (docs/exec-protocol.md, "Adaptive trials").
	o.ThroughputHalfWidth = 1
	o.GoodputIntervals = []algorithms.GoodputInterval{{SLA: 2, Goodput: 100, HalfWidth: 1}}
	o.Window = &algorithms.MeasuredWindow{WarmUpSeconds: 30, TransientSeconds: 20, IntervalSeconds: 1, Batches: 20,
		Precision: 0.02, Precise: false, Limit: "throughput", Excess: 1.5}
	for i := range o.Servers {
		o.Servers[i].CPUHalfWidth = 0.01
		for j := range o.Servers[i].Pools {
			o.Servers[i].Pools[j].BusyHalfWidth = 0.5
		}
	}
	// A ramp's window carries its place (version 2).
	b := marshal(t, Response{ProtocolVersion: RampProtocolVersion, Observation: wire.FromObservation(o),
		Ramp: &RampWindow{Users: 100, StartSeconds: 30, EndSeconds: 40}})
	var v any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&v))
	return v
}

// Go writes a nil slice as null; an observation with no pages finished has
// a null bucket list.
func TestNullListsAreEmpty(t *testing.T) {
	m := observationJSON(t)
	set(t, m, "responseTimes.buckets", json.RawMessage("null"))
	set(t, m, "responseTimes.sum", 0)
	set(t, m, "throughput", 0)
	set(t, m, "servers.0.pools", json.RawMessage("null"))
	set(t, m, "servers.4.resources", json.RawMessage("null"))
	got, err := ParseObservation(marshal(t, m), testExperiment())
	require.NoError(t, err)
	assert.Zero(t, got.ResponseTimes.Count())

	_, err = ParseObservation(marshal(t, set(t, m, "servers", json.RawMessage("null"))), testExperiment())
	assert.ErrorContains(t, err, "observation.servers: want a non-empty list, got null")
}

// Issue 25: range problems came one at a time while type problems came
// together; a program's author sees them all in one run.
func TestEveryRangeProblemAtOnce(t *testing.T) {
	o := testObservation()
	o.Throughput = -1
	o.Servers[0].CPU = 1.7
	o.Servers[2].GCShare = 2
	b := marshal(t, Response{ProtocolVersion: ProtocolVersion, Observation: wire.FromObservation(o)})
	_, err := ParseObservation(b, testExperiment())
	var inv *InvalidObservationError
	require.ErrorAs(t, err, &inv)
	assert.Equal(t, []string{
		"observation.throughput: want a number >= 0, got -1",
		"observation.servers[0].cpu: want a number in [0,1], got 1.7",
		"observation.servers[2].gcShare: want a number in [0,1], got 2",
	}, inv.Problems)
}

// An adaptive trial's window is held to what it claims: the precision the
// experiment asked, and half-widths within it when it says it is precise.
func TestAdaptiveWindowIsHeldToItsClaim(t *testing.T) {
	e := testExperiment()
	e.Timing.Precision = 0.02
	adaptive := func(precision, throughputHalfWidth float64) []byte {
		m := observationJSON(t)
		m["throughputHalfWidth"] = throughputHalfWidth
		m["window"] = map[string]any{"warmUpSeconds": 10, "intervalSeconds": 1, "batches": 20, "precision": precision, "precise": true}
		return marshal(t, m)
	}
	o, err := ParseObservation(adaptive(0.02, 15.9), e)
	require.NoError(t, err, "±15.9 of 800 pages/s is within 2%")
	assert.True(t, o.Window.Precise)

	for _, c := range []struct {
		data []byte
		want string
	}{
		{adaptive(0.02, 400), "observation.throughputHalfWidth: 400 is wider than the precision 0.02 allows (16) while window.precise is true"},
		{adaptive(0.0001, 15.9), "observation.window.precision: want the experiment's timing.precision 0.02 (or no window, for a trial that ignored it), got 0.0001"},
	} {
		_, err := ParseObservation(c.data, e)
		var inv *InvalidObservationError
		require.ErrorAs(t, err, &inv)
		assert.Equal(t, []string{c.want}, inv.Problems)
	}
}

// A message about stdout that is not one JSON object quotes where it went
// wrong: the second value whole, and the place of a NaN deep in the object.
func TestParseErrorsQuoteWhereStdoutWentWrong(t *testing.T) {
	_, err := ParseObservation([]byte(`{"a": 1} {"b": 2}`), testExperiment())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `after the first came "{\"b\": 2}"`)

	m := observationJSON(t)
	data := marshal(t, m)
	data = bytes.Replace(data, []byte(`"sum":900`), []byte(`"sum":NaN`), 1)
	require.Contains(t, string(data), "NaN", "the sample holds a histogram sum to spoil")
	_, err = ParseObservation(data, testExperiment())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid character 'N'")
	assert.Contains(t, err.Error(), `\"sum\":NaN`, "the place is quoted")
}

// Issue 35: a broken pipe to the program is the program's failure. One that
// exits, even with status 0, before reading the experiment did not run it.
// A message larger than a pipe holds makes the write outlast the program.
func TestAProgramThatExitsWithoutReadingFails(t *testing.T) {
	big := map[string]string{"padding": strings.Repeat("x", 1<<20)}
	for _, c := range []struct{ body, want string }{
		{`exit 0`, "the program exited without reading its experiment from stdin (writing it: broken pipe)"},
		{`echo broken >&2; exit 1`, "program failed: exit status 1; stderr (last 1 lines): broken"},
	} {
		_, err := runProcess(context.Background(), process{argv: []string{"/bin/sh", "-c", c.body}, stdin: big,
			timeout: time.Minute, grace: time.Second, limit: 1 << 10, line: func(string) {}, note: func(string, ...any) {}})
		require.Error(t, err, c.body)
		assert.Contains(t, err.Error(), c.want)
	}
	// One that reads it all is fine.
	_, err := runProcess(context.Background(), process{argv: []string{"/bin/sh", "-c", "cat >/dev/null"}, stdin: big,
		timeout: time.Minute, grace: time.Second, limit: 1 << 10, line: func(string) {}, note: func(string, ...any) {}})
	require.NoError(t, err)
}

// Issue 35: goodput came back for an SLA nobody asked for, and the program's
// contradictions (goodput ten times the throughput, marked precise) were
// journaled. Goodput is for the thresholds the request sent, and every
// observation passes the one consistency check.
func TestGoodputIsForTheThresholdsAsked(t *testing.T) {
	e := testExperiment()
	e.Timing.Precision, e.Timing.SLAs = 0.02, []float64{0.5, 2}
	withGoodput := func(g ...map[string]any) []byte {
		m := observationJSON(t)
		m["throughputHalfWidth"] = 8
		m["window"] = map[string]any{"warmUpSeconds": 10, "intervalSeconds": 1, "batches": 20, "precision": 0.02, "precise": true}
		list := []any{}
		for _, x := range g {
			list = append(list, x)
		}
		m["goodput"] = list
		return marshal(t, m)
	}
	gp := func(sla, goodput float64) map[string]any {
		return map[string]any{"sla": sla, "goodput": goodput, "halfWidth": goodput / 100}
	}
	_, err := ParseObservation(withGoodput(gp(0.5, 700), gp(2, 790)), e)
	require.NoError(t, err)

	for _, c := range []struct {
		data []byte
		e    algorithms.Experiment
		want string
	}{
		{withGoodput(gp(0.5, 700), gp(1, 790)), e,
			"observation.goodput[1].sla: goodput at 1 s, a threshold the experiment did not ask for; want goodput at timing.slas [0.5 2] only"},
		{withGoodput(gp(0.5, 8000), gp(2, 790)), e,
			"observation.goodput[0].goodput: 8000 pages/s within 0.5 s is more than the throughput, 800 pages/s"},
	} {
		_, err := ParseObservation(c.data, c.e)
		var inv *InvalidObservationError
		require.ErrorAs(t, err, &inv)
		require.Len(t, inv.Problems, 1)
		assert.Contains(t, inv.Problems[0], c.want)
	}
	// Pages served and none in the histogram: every goodput would read 0.
	m := observationJSON(t)
	set(t, m, "responseTimes.buckets", json.RawMessage("[]"))
	set(t, m, "responseTimes.sum", 0)
	_, err = ParseObservation(marshal(t, m), testExperiment())
	assert.ErrorContains(t, err, "observation.responseTimes: no pages in the buckets, but throughput 800 pages/s over runtimeSeconds 10 is 8000 pages")

	// A fixed trial is sent no thresholds: goodput in its answer was asked by nobody.
	fixed := testExperiment()
	fixed.Timing.SLAs = []float64{0.5}
	m = observationJSON(t)
	m["goodput"] = []any{gp(0.5, 700)}
	_, err = ParseObservation(marshal(t, m), fixed)
	assert.ErrorContains(t, err, "observation.goodput[0].sla: goodput at 0.5 s, a threshold the experiment did not ask for; want no goodput (the request sent no timing.slas)")
}
