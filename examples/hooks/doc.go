// Package hooks holds example hooks for the live runner (one shell script a
// server, see README.md) and, in its tests, runs each against the real
// server it resizes.
package hooks
