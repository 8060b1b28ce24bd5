package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// softallocBinary builds the command once per test run, for tests that need
// a real process (signals, exit codes).
func softallocBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "softalloc-bin"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "softalloc")
		out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/softalloc").CombinedOutput()
		if err != nil {
			binErr = err
			t.Logf("go build: %s", out)
		}
	})
	if binErr != nil {
		t.Fatalf("build softalloc: %v", binErr)
	}
	return binPath
}
