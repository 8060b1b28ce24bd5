//go:build unix

package journal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lock takes an exclusive lock on real+".lock" without waiting; real is the
// file the journal's path resolves to, so that every name of one journal
// takes one lock. The lock is a file of its own, never removed: --fresh
// renames the journal, and a lock on the journal itself would move with it.
// The kernel drops the lock when the process dies, so a killed run never
// leaves the journal locked.
func lock(path, real string) (*os.File, error) {
	f, err := os.OpenFile(real+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("journal %q: lock: %w", path, err)
	}
	if err := flock(path, f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// lockFile locks the open journal itself. A hard link is a second name that
// resolving symlinks does not join, so the .lock beside each name differs;
// a flock belongs to the file (its device and inode), whatever name opened it.
func lockFile(path string, f *os.File) error { return flock(path, f) }

func flock(path string, f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return quiet{fmt.Sprintf("journal %q is in use by another softalloc run (two runs appending to one journal would interleave their lines): wait for it to finish, or pass --journal PATH", path), ErrInUse}
		}
		return fmt.Errorf("journal %q: lock: %w", path, err)
	}
	return nil
}
