package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// memStats is one tier's memory; a negative value is unknown.
//
// "Used" is the working set: what the tier's cgroup is charged (anonymous
// memory, shared memory such as OPcache's, kernel memory, and page cache)
// less its inactive file pages. memory.current (v2) and
// memory.usage_in_bytes (v1) count the page cache, which the kernel reclaims
// before it OOM-kills anything: a tier that once read a large file reads
// near its limit for ever while nothing is short. Inactive file pages go
// first and cheaply; active file pages go too, under pressure, so the working
// set can still overstate the need by the hot page cache (cAdvisor's and the
// kubelet's container_memory_working_set_bytes make the same choice). A tier
// whose working set fills its limit is reclaiming its hot pages or about to
// be OOM-killed: exhausted.
type memStats struct {
	usage      float64 // bytes charged, page cache included
	workingSet float64 // usage less inactive file pages
	limit      float64 // bytes: the cgroup's limit, or the machine's memory when none is lower
	limited    bool    // the cgroup has a limit below the machine's memory
	oomKills   float64 // processes the OOM killer killed in the cgroup
	limitHits  float64 // times usage hit the limit (v1 failcnt, v2 memory.events max)
	// PSI: seconds in which some (at least one) / full (every non-idle)
	// task of the cgroup stalled on memory; v2, or v1 on kernels with PSI
	// for v1 cgroups.
	someStall, fullStall float64
	source               string // "cgroup" or "proc" (no memory cgroup: the processes' PSS)
}

func unknownMem() memStats {
	return memStats{usage: -1, workingSet: -1, limit: -1, oomKills: -1, limitHits: -1, someStall: -1, fullStall: -1}
}

// machineMemory is MemTotal: the limit of a tier with none of its own.
func machineMemory() (float64, error) {
	kv, err := readColonKV("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	kb, ok := kv["MemTotal"]
	if !ok {
		return 0, errors.New("/proc/meminfo has no MemTotal")
	}
	return kb * 1024, nil
}

// readColonKV reads "Key:   123 kB" lines (meminfo, smaps_rollup); the
// values are as written (kB).
func readColonKV(path string) (map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if f := strings.Fields(v); len(f) > 0 {
			if n, err := strconv.ParseFloat(f[0], 64); err == nil {
				out[k] = n
			}
		}
	}
	return out, sc.Err()
}

// withLimit sets the limit: a cgroup limit at or above the machine's memory
// (v1 writes "no limit" as 2^63 rounded to a page, v2 as "max") is none, and
// the machine's memory is the bound, as the machine's cores are a CPU's
// without a quota.
func (m *memStats) withLimit(limit float64) error {
	total, err := machineMemory()
	if err != nil {
		return err
	}
	m.limit, m.limited = total, false
	if limit > 0 && limit < total {
		m.limit, m.limited = limit, true
	}
	return nil
}

// readPSI reads a pressure file's total= of "some" and "full", in seconds;
// -1 each when the file is absent (no PSI for this cgroup).
func readPSI(path string) (some, full float64, err error) {
	some, full = -1, -1
	b, err := os.ReadFile(path)
	if err != nil {
		// Absent (v1, or a kernel without PSI), or refused (a kernel built
		// with PSI but booted with psi=0 fails the read with EOPNOTSUPP).
		return some, full, nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				us, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return -1, -1, fmt.Errorf("%s: %q: %w", path, line, err)
				}
				switch f[0] {
				case "some":
					some = us / 1e6
				case "full":
					full = us / 1e6
				}
			}
		}
	}
	return some, full, nil
}

// memoryV1 reads a v1 memory cgroup's directory.
func memoryV1(dir string) (memStats, error) {
	m := unknownMem()
	m.source = "cgroup"
	var err error
	// usage_in_bytes is the page counter the limit is checked against
	// (memory.stat's rss + cache, give or take the per-CPU charge batches of
	// 64 pages), kernel memory included.
	if m.usage, err = readNumber(filepath.Join(dir, "memory.usage_in_bytes")); err != nil {
		return m, err
	}
	st, err := readKV(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return m, err
	}
	// total_ counts the cgroup's descendants too, as usage does.
	m.workingSet = max(0, m.usage-st["total_inactive_file"])
	limit, err := readNumber(filepath.Join(dir, "memory.limit_in_bytes"))
	if err != nil {
		return m, err
	}
	if err := m.withLimit(limit); err != nil {
		return m, err
	}
	if m.limitHits, err = readNumber(filepath.Join(dir, "memory.failcnt")); err != nil {
		return m, err
	}
	oc, err := readKV(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		return m, err
	}
	if n, ok := oc["oom_kill"]; ok { // Linux 4.13 and later
		m.oomKills = n
	}
	m.someStall, m.fullStall, err = readPSI(filepath.Join(dir, "memory.pressure"))
	return m, err
}

// memoryV2 reads a v2 cgroup's directory.
func memoryV2(dir string) (memStats, error) {
	m := unknownMem()
	m.source = "cgroup"
	var err error
	if m.usage, err = readNumber(filepath.Join(dir, "memory.current")); err != nil {
		return m, err
	}
	st, err := readKV(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return m, err
	}
	m.workingSet = max(0, m.usage-st["inactive_file"])
	b, err := os.ReadFile(filepath.Join(dir, "memory.max"))
	if err != nil {
		return m, err
	}
	limit := -1.0
	if s := strings.TrimSpace(string(b)); s != "max" {
		if limit, err = strconv.ParseFloat(s, 64); err != nil {
			return m, fmt.Errorf("memory.max %q: %w", s, err)
		}
	}
	if err := m.withLimit(limit); err != nil {
		return m, err
	}
	// memory.events counts this cgroup and its descendants (local: itself).
	ev, err := readKV(filepath.Join(dir, "memory.events"))
	if err != nil {
		return m, err
	}
	m.oomKills, m.limitHits = ev["oom_kill"], ev["max"]
	m.someStall, m.fullStall, err = readPSI(filepath.Join(dir, "memory.pressure"))
	return m, err
}

// memoryOfProcesses is the memory of a tier without a memory cgroup of its
// own (a v1 machine whose memory hierarchy holds no cgroup for it, or proc
// mode): the proportional set size of its processes' anonymous and shared
// memory (smaps_rollup's Pss_Anon + Pss_Shmem), so that memory several
// processes share (php-fpm's OPcache, a preforked server's heap) counts once
// and not once per process, as RSS would. No limit applies but the
// machine's, and nothing counts OOM kills.
func memoryOfProcesses(pids []int) (memStats, error) {
	m := unknownMem()
	m.source = "proc"
	var sum float64
	for _, pid := range pids {
		kv, err := readColonKV(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
		if err != nil {
			continue // exited meanwhile, or a kernel thread
		}
		sum += (kv["Pss_Anon"] + kv["Pss_Shmem"]) * 1024
	}
	m.usage, m.workingSet = sum, sum
	return m, m.withLimit(-1)
}

// cgroupProcs lists the pids of a cgroup directory.
func cgroupProcs(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
