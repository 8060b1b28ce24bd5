// Package version tells which softalloc this is: the version a release
// build stamps in (goreleaser's ldflags), else the module version `go install
// ...@v1.2.3` records, else "devel" with the commit a build from a checkout
// records.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// stamped is set by release builds:
//
//	go build -ldflags "-X github.com/softalloc/softalloc/internal/version.stamped=1.2.3"
var stamped string

// Info is what the build says of itself.
type Info struct {
	Version  string // "1.2.3", "v1.2.3" or "devel"
	Commit   string // the VCS revision, shortened; empty when unknown
	Date     string // the commit's time
	Modified bool   // built from a checkout with uncommitted changes
}

// Get reads the build's information.
func Get() Info {
	i := Info{Version: "devel"}
	bi, ok := debug.ReadBuildInfo()
	if ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		i.Version = bi.Main.Version
	}
	if ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = s.Value[:min(12, len(s.Value))]
			case "vcs.time":
				i.Date = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if stamped != "" {
		i.Version = stamped
	}
	return i
}

// String is the version alone, as JSON results carry it: "1.2.3", or
// "devel+3f2a9c1b7d4e" (and "-dirty") from a checkout.
func String() string {
	i := Get()
	v := i.Version
	if v == "devel" && i.Commit != "" {
		v += "+" + i.Commit
		if i.Modified {
			v += "-dirty"
		}
	}
	return v
}

// Long is what --version prints.
func Long() string {
	i := Get()
	s := "softalloc " + String()
	if i.Commit != "" && i.Version != "devel" {
		s += " (commit " + i.Commit + ")"
	}
	if i.Date != "" {
		s += ", built from a commit of " + i.Date
	}
	return fmt.Sprintf("%s, %s %s/%s", s, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
