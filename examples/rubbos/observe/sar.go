package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// cpuUtilization reads `sar -u` output (sysstat, any version, 12- or
// 24-hour clock, `-u` or `-u ALL` columns) and returns the mean CPU
// utilisation of the "all" rows in [0,1]: 1 - (%idle + %iowait)/100.
// iowait is idle time too (the CPU waits for a disk); a disk-bound tier
// should show up in a disk resource, not as a busy CPU.
//
// The mean of the sample rows is used, so that output cut short (sar
// killed before its Average line) still counts; the Average row is the
// fallback when there are no samples.
func cpuUtilization(r io.Reader) (float64, int, error) {
	sc := bufio.NewScanner(r)
	var (
		idle, iowait = -1, -1 // column offsets after the CPU column
		sum          float64
		n            int
		average      = -1.0
		lineNo       int
	)
	for sc.Scan() {
		lineNo++
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		// A header repeats every screenful; it names the columns.
		if c := index(f, "CPU"); c >= 0 && index(f, "%idle") > c {
			idle, iowait = index(f, "%idle")-c, index(f, "%iowait")-c
			if iowait < 0 {
				iowait = 0 // very old sysstat: no %iowait column
			}
			continue
		}
		// The CPU column of a data row: after "Average:" or the time
		// ("10:00:01", or "10:00:01 AM").
		cpu := 1
		if f[1] == "AM" || f[1] == "PM" {
			cpu = 2
		}
		if f[cpu] != "all" || idle < 0 {
			continue // one CPU's row, a RESTART line, the banner
		}
		if cpu+idle >= len(f) {
			return 0, 0, fmt.Errorf("line %d: want a %%idle column, got %q", lineNo, sc.Text())
		}
		id, err := percent(f[cpu+idle])
		if err != nil {
			return 0, 0, fmt.Errorf("line %d: %%idle: %w", lineNo, err)
		}
		var wait float64
		if iowait > 0 {
			if wait, err = percent(f[cpu+iowait]); err != nil {
				return 0, 0, fmt.Errorf("line %d: %%iowait: %w", lineNo, err)
			}
		}
		u := min(max(1-(id+wait)/100, 0), 1)
		if strings.HasPrefix(f[0], "Average") {
			average = u
			continue
		}
		sum += u
		n++
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	switch {
	case n > 0:
		return sum / float64(n), n, nil
	case average >= 0:
		return average, 0, nil
	}
	return 0, 0, fmt.Errorf("no \"all\" CPU rows: want the output of sar -u")
}

func index(f []string, s string) int {
	for i, v := range f {
		if v == s {
			return i
		}
	}
	return -1
}

// percent parses a sar number; some locales write a decimal comma.
func percent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.Replace(s, ",", ".", 1), 64)
	if err != nil || v < 0 || v > 100 {
		return 0, fmt.Errorf("want a percentage, got %q", s)
	}
	return v, nil
}
