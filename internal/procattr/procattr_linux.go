package procattr

import "syscall"

// Child is a process group of its own and SIGTERM when softalloc dies, by
// any means: the default action ends the program, and a program that starts
// others can trap it to stop them (trap 'kill 0' TERM). A program that
// ignores SIGTERM outlives softalloc.
func Child() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
