//go:build linux

package evaluate

import "syscall"

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's usage.
const rusageThread = 1

// threadCPUSeconds is the calling thread's CPU time so far, user and
// system. A job locked to its thread (runtime.LockOSThread) reads its own
// cost from it while other jobs run beside it.
func threadCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
}

// threadCPU says threadCPUSeconds measures one thread: jobs may run side
// by side and still each know their CPU.
const threadCPU = true
