package safefile_test

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/safefile"
)

func write(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// Issue 25: --metrics-file replaced a symlink, a FIFO or a device with a
// regular file.
func TestWriteGoesThroughALinkAndRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "collector", "capacity.prom")
	require.NoError(t, os.Mkdir(filepath.Dir(target), 0o755))
	link := filepath.Join(dir, "capacity.prom")
	require.NoError(t, os.Symlink(target, link))
	require.NoError(t, safefile.Write(link, 0o644, write("a 1\n")), "a dangling link: its target is created")
	require.NoError(t, safefile.Write(link, 0o644, write("a 2\n")))
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link stays a link")
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "a 2\n", string(b))
	left, err := filepath.Glob(filepath.Join(dir, "collector", ".*"))
	require.NoError(t, err)
	assert.Empty(t, left, "no temporary file left")

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	for _, p := range []string{fifo, "/dev/null", dir} {
		err := safefile.Write(p, 0o644, write("x\n"))
		require.Error(t, err, p)
		assert.Contains(t, err.Error(), "not a regular file")
		require.Error(t, safefile.CheckWritable(p))
	}
	fi, err = os.Lstat(fifo)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeNamedPipe, "the FIFO is untouched")
}

func TestAFailedWriteLeavesTheOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.prom")
	require.NoError(t, safefile.Write(path, 0o644, write("old\n")))
	err := safefile.Write(path, 0o644, func(w io.Writer) error { return io.ErrShortWrite })
	require.ErrorIs(t, err, io.ErrShortWrite)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "old\n", string(b))
}
