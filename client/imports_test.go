package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsOnlyStandardLibrary holds the package doc's promise: package
// client imports nothing outside the standard library, so a sender does not
// inherit the middleware or any store.
func TestImportsOnlyStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/geoidem/geoidem/client" {
			t.Errorf("package client depends on %s", p)
		}
	}
}
