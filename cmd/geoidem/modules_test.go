package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPullsOnlyWhatTheLibraryNeeds: `go install …/cmd/geoidem` brings no
// module the library's go.mod does not already require.
func TestPullsOnlyWhatTheLibraryNeeds(t *testing.T) {
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]bool{"github.com/geoidem/geoidem": true}
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && strings.Contains(f[0], ".") && strings.HasPrefix(f[1], "v") {
			required[f[0]] = true
		}
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, m := range strings.Fields(string(out)) {
		if !required[m] {
			t.Errorf("cmd/geoidem depends on module %s, which the library's go.mod does not require", m)
		}
	}
}
