//go:build !unix

package journal

import "os"

// lock is a no-op where flock is missing: one run per journal is then the
// user's to keep.
func lock(path, real string) (*os.File, error) { return nil, nil }

// lockFile is a no-op too, for the same reason.
func lockFile(path string, f *os.File) error { return nil }
