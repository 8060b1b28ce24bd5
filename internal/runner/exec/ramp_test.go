package exec

import (
	"context"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// rampExperiment is testExperiment as a ramp's: adaptive windows.
func rampExperiment() algorithms.Ramp {
	e := testExperiment()
	e.Timing.Precision = 0.02
	return algorithms.Ramp{Deployment: e.Deployment, Allocation: e.Allocation, From: 100, Timing: e.Timing}
}

// rampScript is a version 2 program that answers each level with
// testObservation (10 s windows, back to back) at the level's users, and
// writes every line it read to $DIR/stdin. Before its first window,
// $DIR/before (if any) runs, with $users set.
func rampScript(t *testing.T, dir string) string {
	t.Helper()
	w := observationJSON(t)
	w["protocolVersion"] = 2
	w["ramp"] = map[string]any{"users": "@USERS@", "startSeconds": "@START@", "endSeconds": "@END@"}
	b := strings.NewReplacer(`"@USERS@"`, "@USERS@", `"@START@"`, "@START@", `"@END@"`, "@END@").Replace(string(marshal(t, w)))
	writeFile(t, dir, "window.json", []byte(b+"\n"), 0o644)
	return script(t, dir, `IFS= read -r exp
printf '%s\n' "$exp" >> "$DIR/stdin"
users=$(printf '%s' "$exp" | sed 's/.*"workload":{"users":\([0-9]*\)}.*/\1/')
i=0
while :; do
  [ -f "$DIR/before" ] && . "$DIR/before"
  sed "s/@USERS@/$users/g; s/@START@/$((i*10))/g; s/@END@/$((i*10+10))/g" "$DIR/window.json"
  IFS= read -r step || exit 0
  printf '%s\n' "$step" >> "$DIR/stdin"
  users=$(printf '%s' "$step" | sed 's/.*"users":\([0-9]*\).*/\1/')
  [ "$users" = 0 ] && exit 0
  i=$((i+1))
done`)
}

// rises is a campaign's next: the levels given, then the end.
func rises(seen *[]algorithms.RampWindow, levels ...int) func(algorithms.RampWindow) (algorithms.RampStep, error) {
	return func(w algorithms.RampWindow) (algorithms.RampStep, error) {
		*seen = append(*seen, w)
		if len(*seen) > len(levels) {
			return algorithms.RampStep{}, nil
		}
		return algorithms.RampStep{Users: levels[len(*seen)-1]}, nil
	}
}

func TestRampOverTheProtocol(t *testing.T) {
	dir := t.TempDir()
	r, log := testRunner(t, rampScript(t, dir))
	r.Protocol = RampProtocolVersion
	var seen []algorithms.RampWindow
	require.NoError(t, r.RunRamp(context.Background(), rampExperiment(), rises(&seen, 200, 200, 300)))

	require.Len(t, seen, 4)
	for i, w := range seen {
		assert.Equal(t, i, w.Index)
		assert.Equal(t, []int{100, 200, 200, 300}[i], w.Users)
		assert.Equal(t, float64(10*i), w.Start)
		assert.Equal(t, float64(10*i+10), w.End)
		assert.Equal(t, 10.0, w.Elapsed)
		assert.Equal(t, testObservation(), w.Observation)
	}
	b, err := os.ReadFile(filepath.Join(dir, "stdin"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 5, "the experiment and four steps")
	var req Request
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &req))
	assert.Equal(t, RampProtocolVersion, req.ProtocolVersion)
	assert.True(t, req.Ramp)
	assert.Equal(t, 100, req.Workload.Users)
	assert.Equal(t, []string{`{"users":200}`, `{"users":200}`, `{"users":300}`, `{"users":0}`}, lines[1:])
	assert.Contains(t, req.ExperimentID, "-ramp-u100-")
	trial, err := NewRequest(algorithms.Experiment{Deployment: rampExperiment().Deployment, Allocation: rampExperiment().Allocation,
		Workload: algorithms.Workload{Users: 100}, Timing: rampExperiment().Timing})
	require.NoError(t, err)
	assert.NotEqual(t, trial.ExperimentID, req.ExperimentID, "a ramp's id is not a trial's at its first level")
	assert.NotContains(t, log.String(), "failed")
}

// A version 1 program is never sent a ramp: it would run its first level
// as a trial.
func TestRampNeedsAProgramOfVersion2(t *testing.T) {
	dir := t.TempDir()
	r, _ := testRunner(t, rampScript(t, dir))
	require.ErrorContains(t, r.CanRamp(), "runner.protocol: 2")
	err := r.RunRamp(context.Background(), rampExperiment(), func(algorithms.RampWindow) (algorithms.RampStep, error) {
		t.Fatal("no window without version 2")
		return algorithms.RampStep{}, nil
	})
	require.ErrorContains(t, err, "a ramp needs version 2")
	assert.NoFileExists(t, filepath.Join(dir, "stdin"), "the program never ran")

	r.Protocol = 3
	require.ErrorContains(t, r.CanRamp(), "protocol version 3: want 1 or 2")
}

// A ramp whose process fails goes on in a new one from the level it was
// at, the windows numbered on and its clock going on.
func TestRampRetriesFromItsLevel(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "before", []byte(`[ "$SOFTALLOC_ATTEMPT" = 1 ] && [ "$i" = 2 ] && { echo "the load generator died" >&2; exit 3; }
true
`), 0o644)
	r, log := testRunner(t, rampScript(t, dir))
	r.Protocol = RampProtocolVersion
	r.Retries = 1
	var seen []algorithms.RampWindow
	require.NoError(t, r.RunRamp(context.Background(), rampExperiment(), rises(&seen, 200, 300, 400)))
	require.Len(t, seen, 4)
	assert.Equal(t, []int{100, 200, 300, 400}, []int{seen[0].Users, seen[1].Users, seen[2].Users, seen[3].Users})
	assert.Equal(t, 3, seen[3].Index)
	assert.Equal(t, 20.0, seen[2].Start, "the second process's first window follows the first's last")
	assert.Equal(t, 40.0, seen[3].End)
	assert.Contains(t, log.String(), "the ramp goes on in a new process from 300 users")
	b, err := os.ReadFile(filepath.Join(dir, "stdin"))
	require.NoError(t, err)
	var req Request
	second := strings.Split(string(b), "\n")[3]
	require.NoError(t, json.Unmarshal([]byte(second), &req), second)
	assert.Equal(t, 2, req.Attempt)
	assert.Equal(t, 300, req.Workload.Users)
}

// A window is held to the level it was asked for, and to the ramp's form.
func TestRampWindowsAreChecked(t *testing.T) {
	for name, tc := range map[string]struct {
		edit string
		want string
	}{
		"other users":   {`s/"users":@USERS@/"users":7/`, "observation.ramp.users: want 100, the level asked for, got 7"},
		"no place":      {`s/,"ramp":{[^}]*}//`, "observation.ramp: missing"},
		"version 1":     {`s/"protocolVersion":2/"protocolVersion":1/`, "observation.protocolVersion: want 2, the experiment's, got 1"},
		"short window":  {`s/"endSeconds":@END@/"endSeconds":@START@.5/`, "is not runtimeSeconds 10 long"},
		"not json":      {`s/^/progress: /`, "not a JSON observation"},
		"misspelt name": {`s/"throughput":800/"Throughput":800/`, "observation.Throughput: unknown field"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			prog := rampScript(t, dir)
			b, err := os.ReadFile(filepath.Join(dir, "window.json"))
			require.NoError(t, err)
			writeFile(t, dir, "edit.sed", []byte(tc.edit+"\n"), 0o644)
			writeFile(t, dir, "window.json", b, 0o644)
			out, err := runSed(filepath.Join(dir, "edit.sed"), filepath.Join(dir, "window.json"))
			require.NoError(t, err, out)
			r, _ := testRunner(t, prog)
			r.Protocol = RampProtocolVersion
			err = r.RunRamp(context.Background(), rampExperiment(), func(algorithms.RampWindow) (algorithms.RampStep, error) {
				t.Fatal("an invalid window reached the campaign")
				return algorithms.RampStep{}, nil
			})
			require.ErrorContains(t, err, tc.want)
			assert.ErrorContains(t, err, "window 0 at 100 users")
		})
	}
}

// The campaign's error ends the ramp at once, not retried; a step down is
// refused.
func TestRampStopsOnTheCampaignsError(t *testing.T) {
	dir := t.TempDir()
	r, _ := testRunner(t, rampScript(t, dir))
	r.Protocol, r.Retries = RampProtocolVersion, 3
	n := 0
	err := r.RunRamp(context.Background(), rampExperiment(), func(algorithms.RampWindow) (algorithms.RampStep, error) {
		n++
		return algorithms.RampStep{Users: 50}, nil
	})
	require.ErrorContains(t, err, "a step from 100 down to 50 users")
	assert.Equal(t, 1, n)
}

// A program that ends before the ramp does fails the attempt, naming the
// level; with no retries left the ramp fails.
func TestRampProgramThatEndsEarlyFails(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "before", []byte(`[ "$i" = 1 ] && exit 0
true
`), 0o644)
	r, _ := testRunner(t, rampScript(t, dir))
	r.Protocol = RampProtocolVersion
	var seen []algorithms.RampWindow
	err := r.RunRamp(context.Background(), rampExperiment(), rises(&seen, 200, 300))
	require.ErrorContains(t, err, "the program exited before the ramp ended (at 200 users, awaiting a window)")
	assert.Len(t, seen, 1)
}

// A window that does not come within the timeout fails the attempt and
// stops the program.
func TestRampWindowTimeout(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "before", []byte(`[ "$i" = 1 ] && { echo $$ > "$DIR/pid.tmp"; mv "$DIR/pid.tmp" "$DIR/pid"; sleep 60; }
true
`), 0o644)
	r, _ := testRunner(t, rampScript(t, dir))
	r.Protocol, r.Timeout = RampProtocolVersion, 500*time.Millisecond
	var seen []algorithms.RampWindow
	err := r.RunRamp(context.Background(), rampExperiment(), rises(&seen, 200, 300))
	require.ErrorIs(t, err, ErrTimeout)
	require.ErrorContains(t, err, "no window at 200 users within 500ms")
	requireGone(t, readPID(t, filepath.Join(dir, "pid")))
}

// A program that says it speaks version 2 gets version 2 in its trials
// too, and answers in it.
func TestTrialsOfAVersion2Program(t *testing.T) {
	dir := t.TempDir()
	obs := observationJSON(t)
	obs["protocolVersion"] = 2
	writeFile(t, dir, "obs.json", marshal(t, obs), 0o644)
	r, _ := testRunner(t, script(t, dir, `cat > "$DIR/request.json"
echo "$SOFTALLOC_PROTOCOL_VERSION" > "$DIR/env"
cat "$DIR/obs.json"`))
	r.Protocol = RampProtocolVersion
	got, err := r.RunExperiment(context.Background(), testExperiment())
	require.NoError(t, err)
	assert.Equal(t, testObservation(), got)
	var req Request
	require.NoError(t, json.Unmarshal(mustRead(t, filepath.Join(dir, "request.json")), &req))
	assert.Equal(t, 2, req.ProtocolVersion)
	assert.False(t, req.Ramp)
	assert.Equal(t, "2\n", string(mustRead(t, filepath.Join(dir, "env"))))

	// A version 1 answer to a version 2 trial is refused.
	obs["protocolVersion"] = 1
	writeFile(t, dir, "obs.json", marshal(t, obs), 0o644)
	_, err = r.RunExperiment(context.Background(), testExperiment())
	require.ErrorContains(t, err, "observation.protocolVersion: want 2, the experiment's, got 1")
	// And a trial's observation never carries a ramp's place.
	obs["protocolVersion"] = 2
	obs["ramp"] = map[string]any{"users": 6000, "startSeconds": 0, "endSeconds": 10}
	writeFile(t, dir, "obs.json", marshal(t, obs), 0o644)
	_, err = r.RunExperiment(context.Background(), testExperiment())
	require.ErrorContains(t, err, "observation.ramp: want it only in a ramp's windows")
}

// runSed edits file in place with the sed script at path.
func runSed(path, file string) (string, error) {
	b, err := osexec.Command("sed", "-i", "-f", path, file).CombinedOutput()
	return string(b), err
}
