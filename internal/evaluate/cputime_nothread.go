//go:build !linux

package evaluate

// threadCPUSeconds falls back to the process's CPU time where no thread's
// own is known: the pool then runs one job at a time, so that a job's CPU
// is still its own.
func threadCPUSeconds() float64 { return cpuSeconds() }

const threadCPU = false
