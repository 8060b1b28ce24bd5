//go:build race

package main

// raceEnabled: the race detector shadows the child's memory too.
const raceEnabled = true
