//go:build unix

package cli

import "syscall"

// writable asks the kernel, without creating anything, whether this process
// may write path.
func writable(path string) bool {
	const wOK = 2 // W_OK
	return syscall.Access(path, wOK) == nil
}
