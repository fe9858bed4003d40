package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set by the release build (scripts/release):
// -ldflags "-X main.version=v1.2.3". Empty in any other build, which then
// reports its module version and VCS revision from the build information.
var version string

// versionLine is what `geoidem version` prints: the version, the commit
// when known, the Go version, and the platform.
func versionLine() string {
	v, rev, dirty := version, "", false
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version // "(devel)" in a checkout, vX.Y.Z from go install …@vX.Y.Z
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(unknown)"
	}
	line := "geoidem " + v
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "+dirty"
		}
		line += " (" + rev + ")"
	}
	return fmt.Sprintf("%s %s %s/%s", line, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func printVersion(stdout io.Writer) int {
	fmt.Fprintln(stdout, versionLine())
	return 0
}
