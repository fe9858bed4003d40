package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReleaseScript runs scripts/release for this machine's platform only
// (the four targets differ only in GOOS and GOARCH): the binary it writes
// is static, runs, prints the version it was given, and matches its line
// in SHA256SUMS.
func TestReleaseScript(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the script's test runs a linux build")
	}
	dist := t.TempDir()
	target := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.Command(filepath.Join("..", "..", "scripts", "release"), "v0.0.0-test")
	cmd.Env = append(os.Environ(), "DIST="+dist, "TARGETS="+target)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release: %v\n%s", err, out)
	}
	name := "geoidem-v0.0.0-test-" + runtime.GOOS + "-" + runtime.GOARCH
	bin := filepath.Join(dist, name)
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", name, err, out)
	}
	if !strings.HasPrefix(string(out), "geoidem v0.0.0-test ") || !strings.Contains(string(out), target) {
		t.Errorf("%s version printed %q, want geoidem v0.0.0-test … %s", name, out, target)
	}
	// Static: no interpreter, no dynamic section.
	if f, err := os.ReadFile(bin); err != nil {
		t.Fatal(err)
	} else if strings.Contains(string(f), "/lib64/ld-linux") || strings.Contains(string(f), "/lib/ld-linux") {
		t.Errorf("%s names a dynamic loader: not static", name)
	}
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.ReadFile(bin)
	sum := sha256.Sum256(f)
	if want := hex.EncodeToString(sum[:]) + "  " + name + "\n"; string(sums) != want {
		t.Errorf("SHA256SUMS = %q, want %q", sums, want)
	}
}

// TestVersionFromBuildInfo: a build without the release's -ldflags still
// says what it is, from the build information.
func TestVersionFromBuildInfo(t *testing.T) {
	code, out, errs := geoidem(t, "", "version")
	if code != 0 || !strings.HasPrefix(out, "geoidem ") || !strings.Contains(out, runtime.Version()) || strings.Contains(out, "(unknown)") {
		t.Errorf("geoidem version: exit %d, %q %q", code, out, errs)
	}
}
