package cli_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docCommands are the softalloc commands of docs/ci.md as a shell runs
// them: continuation lines joined, YAML's indentation folded.
func docCommands(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../docs/ci.md")
	require.NoError(t, err)
	lines := strings.Split(string(data), "\n")
	var cmds []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		at := strings.Index(l, "softalloc check")
		if at < 0 || strings.Contains(l, "`softalloc check") {
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " -"))
		cmd := strings.TrimSpace(l[at:])
		for i+1 < len(lines) {
			next := lines[i+1]
			nIndent := len(next) - len(strings.TrimLeft(next, " "))
			cont := strings.HasSuffix(cmd, "\\")
			folded := strings.HasPrefix(strings.TrimSpace(lines[i]), "- softalloc") || (nIndent > indent && strings.HasPrefix(strings.TrimSpace(next), "--"))
			if !cont && !folded || strings.TrimSpace(next) == "" || strings.HasPrefix(strings.TrimSpace(next), "- ") || strings.HasPrefix(strings.TrimSpace(next), "```") {
				if !cont {
					break
				}
			}
			if !cont && nIndent <= indent {
				break
			}
			cmd = strings.TrimSuffix(cmd, "\\") + " " + strings.TrimSpace(next)
			i++
		}
		cmds = append(cmds, cmd)
	}
	return cmds
}

// Issue 24: the CI job of docs/ci.md failed without its Pushgateway
// secret. Every command of the document is run as written, with the secret
// empty and with a real Pushgateway.
func TestCIDocCommandsRunAsWritten(t *testing.T) {
	bin := softallocBinary(t)
	cmds := docCommands(t)
	require.GreaterOrEqual(t, len(cmds), 5, "the baseline, the check, GitHub's, GitLab's and the local try: %q", cmds)
	require.Contains(t, cmds[0], "--output json > capacity.json", "the baseline comes first")
	gateway := startPushgateway(t)
	dir := t.TempDir()
	for _, secret := range []string{"", gateway} {
		for i, c := range cmds {
			c = strings.ReplaceAll(c, "${{ secrets.PUSHGATEWAY_URL }}", "$PUSHGATEWAY_URL")
			c = strings.ReplaceAll(c, "http://127.0.0.1:19091", gateway)
			c = regexp.MustCompile(`\$\{\{[^}]*\}\}`).ReplaceAllString(c, "")
			cmd := exec.Command("sh", "-c", c)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"),
				"PUSHGATEWAY_URL="+secret, "SOFTALLOC_PUSHGATEWAY="+secret, "GITHUB_REF_NAME=main", "CI_COMMIT_REF_NAME=main", "BRANCH=main")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, "command %d with secret %q: %s\n%s\n%s", i+1, secret, c, stderr.String(), out)
		}
	}
	// The push landed, grouped by topology; the JUnit report names each check.
	resp, err := http.Get(gateway + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(body), `softalloc_check_passed{branch="main",check="critical",command="check",instance="",job="softalloc",runner="sim",topology="1/2/1/2"} 1`)
	data, err := os.ReadFile(filepath.Join(dir, "capacity.xml"))
	require.NoError(t, err)
	var suites struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct{}
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(data, &suites))
	require.Len(t, suites.Suites, 1)
	var names []string
	for _, c := range suites.Suites[0].Cases {
		names = append(names, c.Name)
		assert.Nil(t, c.Failure, c.Name)
	}
	assert.Equal(t, []string{"max-regression-goodput", "max-regression-throughput", "critical"}, names)
	assert.Equal(t, 3, suites.Suites[0].Tests)
	assert.Zero(t, suites.Suites[0].Failures)
}
