package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/softalloc/softalloc/internal/safefile"
)

// Output paths are checked when the command starts: a path that cannot be
// written found after the experiments throws their results away.

// plotExtensions are the formats report.SavePlot draws.
var plotExtensions = []string{".svg", ".png", ".pdf"}

// checkOutputFile checks that the command will be able to write path, the
// value of flag: its extension is one of exts (when any are given), it is
// not a directory, and its directory exists and is writable. It creates
// nothing.
func checkOutputFile(flag, path string, exts ...string) error {
	if path == "" {
		return nil
	}
	if len(exts) > 0 && !slices.Contains(exts, strings.ToLower(filepath.Ext(path))) {
		return usagef("%s %q: want a %s file", flag, path, orList(exts))
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return usagef("%s %q: is a directory; want a file", flag, path)
		}
		if !writable(path) {
			return usagef("%s %q: the file is not writable", flag, path)
		}
	}
	if err := checkDirectory(flag, path, filepath.Dir(path)); err != nil {
		return err
	}
	// Permissions can say yes where a write fails (/proc, a read-only
	// mount), and a device or pipe must not be replaced: try, now.
	if err := safefile.CheckWritable(path); err != nil {
		return usagef("%s %q: %w", flag, path, err)
	}
	return nil
}

// checkOutputDir checks that the command will be able to write into dir.
// The command creates dir if missing, but not its parents: a missing parent
// is more likely a mistyped path than a tree to create. It creates nothing.
func checkOutputDir(flag, dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return checkDirectory(flag, dir, filepath.Dir(filepath.Clean(dir)))
	}
	return checkDirectory(flag, dir, dir)
}

func checkDirectory(flag, path, dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usagef("%s %q: directory %q does not exist", flag, path, dir)
	case err != nil:
		return usagef("%s %q: %w", flag, path, err)
	case !fi.IsDir():
		return usagef("%s %q: %q is not a directory", flag, path, dir)
	case !writable(dir):
		return usagef("%s %q: directory %q is not writable", flag, path, dir)
	}
	return nil
}

// orList writes "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
