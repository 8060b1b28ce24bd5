//go:build !race

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

// The busy machine of this test is its own: four CPU-bound processes, and
// Locust at nice 10 below them. In make test's race pass, every other
// package's tests ran beside it too (real servers, the race detector's
// tenfold cost), and Python took 21 s of connectTimeout's 30 s to start
// Locust's master: it runs in the second pass, with the TestSlow tests.

// On a busy machine the workers start their users seconds late (here 3 to 8 s
// into a 3 s ramp-up) and miss Locust's heartbeats while they do: the window
// waits until every user runs (and half the ramp-up more), and the workers
// have connectTimeout to answer until it opens, so a trial beside four
// CPU-bound processes still measures all its users. With a window at a fixed
// ramp-up from the test's start it failed in 5 of 5 runs ("0 of 60 users
// were running when the window opened", or workers marked missing during the
// ramp-up, "stopped answering the master's heartbeats 1.0 s into the window").
func TestSlowLocustWindowWaitsForTheUsersOnABusyMachine(t *testing.T) {
	const users = 60
	timing := algorithms.Timing{RampUp: 3 * time.Second, Runtime: 4 * time.Second, RampDown: time.Second}
	r := newLocalRun(t, 2*time.Millisecond)
	burnCPU(t, 4)

	// Locust below the CPU-bound processes' priority: on a busy machine
	// other work outweighs it (here the testbed's cgroup: 262144 CPU shares
	// to a process's 1024), and at equal weight four processes delayed the
	// users past the ramp-up only while other work ran too.
	nice := writeFile(t, filepath.Join(r.dir, "nice-locust"), "#!/bin/sh\nexec nice -n 10 '"+r.c.Locust+"' \"$@\"\n")
	require.NoError(t, os.Chmod(nice, 0o755))
	r.c.Locust = nice
	var log strings.Builder
	win, err := runLocust(context.Background(), r.c, r.plan(t, users, timing), r.run(), func(f string, a ...any) { fmt.Fprintf(&log, f+"\n", a...) })
	if err != nil {
		// Locust's own account of the ramp-up.
		r.logs(t)
	}
	require.NoError(t, err, log.String())
	t.Log(log.String())
	require.Len(t, win.Workers, 2)
	for _, x := range win.Workers {
		assert.Equal(t, users/2, x.UsersAtOpen, x.Worker)
		assert.Equal(t, users/2, x.UsersAtClose, x.Worker)
		assert.Greater(t, x.Total.NumRequests, int64(0), x.Worker)
	}
	b, err := os.ReadFile(filepath.Join(r.run(), "master.log"))
	require.NoError(t, err)
	for _, line := range regexp.MustCompile(`(?m)^.*(Starting Locust|Sending spawn jobs|softalloc: |Shutting down).*$`).FindAllString(string(b), -1) {
		t.Log(line)
	}
}
