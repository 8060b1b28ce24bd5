// Package procattr gives the programs softalloc starts (an exec runner's
// trial program, the live runner's hook) their process attributes: a process
// group of their own, so one signal reaches everything they start, and on
// Linux a parent-death signal, so that a softalloc killed with kill -9 does
// not leave them running.
package procattr
