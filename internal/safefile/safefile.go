// Package safefile writes the files softalloc leaves behind (a metrics file
// for node_exporter's textfile collector) so that a reader never sees half
// of one and a crash never loses a finished one: a temporary file beside
// the target, synced, renamed over it, and the directory synced. A symlink
// is written through to its target; a device, pipe or directory is refused,
// never replaced.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Resolve follows symlinks to the file a path names, also when that file
// does not exist yet (a dangling link is where it will be created).
func Resolve(path string) (string, error) {
	for range 40 {
		real, err := filepath.EvalSymlinks(path)
		if err == nil {
			return filepath.Abs(real)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		target, lerr := os.Readlink(path)
		if lerr != nil {
			// Not there yet: its directory must be.
			dir, derr := filepath.EvalSymlinks(filepath.Dir(path))
			if derr != nil {
				return "", derr
			}
			return filepath.Abs(filepath.Join(dir, filepath.Base(path)))
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	return "", errors.New("too many levels of symbolic links")
}

// CheckRegular refuses a path that names something other than a regular
// file (or nothing yet).
func CheckRegular(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", Describe(fi.Mode()))
	}
	return nil
}

// Describe names a file mode the way a message to a user should.
func Describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsRegular():
		return "a regular file"
	}
	return "mode " + m.String()
}

// CheckWritable tells, before any work is done, whether Write will be able
// to write path: a probe file is created beside the target and removed (the
// only test that holds on read-only mounts and pseudo file systems such as
// /proc, where permissions say yes).
func CheckWritable(path string) error {
	real, err := Resolve(path)
	if err != nil {
		return err
	}
	if err := CheckRegular(real); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(real), ".softalloc-probe-*")
	if err != nil {
		return fmt.Errorf("cannot create files in %s: %w", filepath.Dir(real), unwrapPath(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// Write writes the file at path (through a symlink to its target) with
// write, atomically and durably.
func Write(path string, perm os.FileMode, write func(io.Writer) error) error {
	real, err := Resolve(path)
	if err != nil {
		return err
	}
	if err := CheckRegular(real); err != nil {
		return err
	}
	dir := filepath.Dir(real)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(real)+".tmp-*")
	if err != nil {
		return unwrapPath(err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		return unwrapPath(err)
	}
	if err := tmp.Sync(); err != nil {
		return unwrapPath(err)
	}
	if err := tmp.Close(); err != nil {
		return unwrapPath(err)
	}
	if err := os.Rename(tmp.Name(), real); err != nil {
		return unwrapPath(err)
	}
	done = true
	// The rename is durable once the directory is.
	d, err := os.Open(dir)
	if err != nil {
		return unwrapPath(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return unwrapPath(err)
	}
	return nil
}

// unwrapPath drops the path from a file system error: it names the
// temporary file, which the user never asked for.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// MaxInput bounds a configuration file softalloc reads whole (a deployment,
// a model, a workload, measurements, a baseline): each is a few kilobytes,
// and the bound keeps a wrong path (a device, a log) from being read into
// memory.
const MaxInput = 1 << 20

// TooLargeError is an input past its bound.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("larger than the %d KiB limit for this file; is it the right one?", e.Limit>>10)
}

// Read reads at most limit bytes of the file at path, refusing a file that
// is larger or that is not a regular file (a device or a FIFO could be
// endless).
func Read(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", Describe(fi.Mode()))
	}
	return ReadAll(f, limit)
}

// ReadAll reads at most limit bytes from r (standard input, say) and
// refuses more.
func ReadAll(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return b, nil
}
