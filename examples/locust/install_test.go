package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePython is a python3 for examples/venv.sh that needs no PyPI: -c
// (the version check) passes unless $FAKE_OLD is set, -m venv DIR makes a
// pip that logs its arguments to $FAKE_LOG and installs both tools'
// executables (exiting 1 if $FAKE_PIP_FAIL is set), and a python whose
// imports log to $FAKE_LOG (failing if $FAKE_IMPORT_FAIL is set).
const fakePython = `#!/bin/sh
case "$1" in
--version) echo "Python 3.9.0" ;;
-c) [ -z "$FAKE_OLD" ] ;;
-m)
	d=$3
	mkdir -p "$d/bin"
	printf '#!/bin/sh\necho "pip $*" >> "$FAKE_LOG"\n[ -z "$FAKE_PIP_FAIL" ] || exit 1\nd=$(dirname "$0")\nfor e in locust pgbouncer-exporter; do printf "#!/bin/sh\\n" > "$d/$e"; chmod +x "$d/$e"; done\n' > "$d/bin/pip"
	printf '#!/bin/sh\necho "python $*" >> "$FAKE_LOG"\n[ -z "$FAKE_IMPORT_FAIL" ]\n' > "$d/bin/python"
	chmod +x "$d/bin/pip" "$d/bin/python" ;;
esac
`

// installTree copies examples/venv.sh and both install scripts with their
// requirements into a directory of the test's, so that a test may change a
// pin; it returns the copy's examples directory.
func installTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "examples")
	for _, f := range []string{"venv.sh", "locust/install-locust.sh", "locust/requirements.txt",
		"pgbouncer-exporter/install-pgbouncer-exporter.sh", "pgbouncer-exporter/requirements.txt"} {
		b, err := os.ReadFile(filepath.Join("..", f))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, f), b, 0o755))
	}
	return root
}

// install runs an install script of tree with the fake Python and the
// cache in cache; env adds variables. It returns stdout, stderr and the
// error.
func install(t *testing.T, tree, script, cache string, env ...string) (string, string, error) {
	t.Helper()
	py := writeExec(t, filepath.Join(filepath.Dir(tree), "python3"), fakePython)
	cmd := osexec.Command(filepath.Join(tree, script))
	cmd.Env = append(os.Environ(), append([]string{"PYTHON=" + py, "XDG_CACHE_HOME=" + cache,
		"FAKE_LOG=" + filepath.Join(filepath.Dir(tree), "log")}, env...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return strings.TrimSpace(stdout.String()), stderr.String(), err
}

func hash8(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])[:8]
}

// Both install scripts are examples/venv.sh's venv_install: a virtual
// environment per version and requirements file, installed once (a second
// call finds it), afresh when any pin changes (Locust's was named after its
// version alone, so a changed dependency pin kept the old install), the
// exporter's with pip --no-deps and its import checked; a failed step
// removes the half-made environment and says which script failed and why.
func TestTheInstallScriptsShareVenvInstall(t *testing.T) {
	tree := installTree(t)
	cache := t.TempDir()
	log := filepath.Join(filepath.Dir(tree), "log")
	readLog := func() string { b, _ := os.ReadFile(log); return string(b) }

	out, stderr, err := install(t, tree, "locust/install-locust.sh", cache)
	require.NoError(t, err, stderr)
	dir := filepath.Join(cache, "softalloc", "locust-2.47.0-"+hash8(t, filepath.Join(tree, "locust", "requirements.txt")))
	assert.Equal(t, filepath.Join(dir, "bin", "locust"), out)
	assert.Contains(t, stderr, "install-locust.sh: installing locust 2.47.0 into "+dir)
	assert.Equal(t, "pip install --quiet --disable-pip-version-check -r "+filepath.Join(tree, "locust", "requirements.txt")+"\n", readLog())

	again, _, err := install(t, tree, "locust/install-locust.sh", cache)
	require.NoError(t, err)
	assert.Equal(t, out, again)
	assert.Equal(t, 1, strings.Count(readLog(), "pip "), "installed once")

	// A dependency's pin changes: a new environment.
	req := filepath.Join(tree, "locust", "requirements.txt")
	b, err := os.ReadFile(req)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(req, append(b, "gevent==24.11.1\n"...), 0o644))
	changed, _, err := install(t, tree, "locust/install-locust.sh", cache)
	require.NoError(t, err)
	assert.NotEqual(t, out, changed)
	assert.Equal(t, 2, strings.Count(readLog(), "pip "))

	// The exporter's options.
	out, stderr, err = install(t, tree, "pgbouncer-exporter/install-pgbouncer-exporter.sh", cache, "FAKE_LOG="+log+".pgb")
	require.NoError(t, err, stderr)
	assert.Equal(t, filepath.Join(cache, "softalloc", "pgbouncer-exporter-2.1.2-"+hash8(t, filepath.Join(tree, "pgbouncer-exporter", "requirements.txt")), "bin", "pgbouncer-exporter"), out)
	b, err = os.ReadFile(log + ".pgb")
	require.NoError(t, err)
	assert.Equal(t, "pip install --quiet --disable-pip-version-check --no-deps -r "+filepath.Join(tree, "pgbouncer-exporter", "requirements.txt")+"\n"+
		"python -W ignore -c import prometheus_pgbouncer_exporter.cli\n", string(b))

	_, stderr, err = install(t, tree, "pgbouncer-exporter/install-pgbouncer-exporter.sh", cache, "FAKE_IMPORT_FAIL=1", "XDG_CACHE_HOME="+t.TempDir())
	require.Error(t, err)
	assert.Contains(t, stderr, "install-pgbouncer-exporter.sh: the installed prometheus-pgbouncer-exporter does not import prometheus_pgbouncer_exporter.cli; see above")

	// An explicit directory: a failed pip leaves nothing there.
	venv := filepath.Join(t.TempDir(), "venv")
	cmdArgs := func(env ...string) (string, error) {
		py := filepath.Join(filepath.Dir(tree), "python3")
		cmd := osexec.Command(filepath.Join(tree, "locust", "install-locust.sh"), venv)
		cmd.Env = append(os.Environ(), append([]string{"PYTHON=" + py, "FAKE_LOG=" + log + ".fail"}, env...)...)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	msg, err := cmdArgs("FAKE_PIP_FAIL=1")
	require.Error(t, err)
	assert.Contains(t, msg, "install-locust.sh: pip install -r "+req+" failed (is PyPI reachable?)")
	_, err = os.Stat(venv)
	assert.ErrorIs(t, err, os.ErrNotExist, "the half-made environment is removed")
	msg, err = cmdArgs("FAKE_OLD=1")
	require.Error(t, err)
	assert.Contains(t, msg, "install-locust.sh: Python 3.9.0 is too old; locust 2.47.0 needs 3.10 or later")
}
