//go:build unix && !linux

package procattr

import "syscall"

// Child is a process group of its own. Other systems have no parent-death
// signal: a program outlives a softalloc killed with kill -9 (a graceful
// stop, SIGINT or SIGTERM, still stops it).
func Child() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
