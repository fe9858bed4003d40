package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsOnlyStandardLibrary holds the package doc's promise: package
// client imports nothing outside the standard library but package problem
// (the RFC 9457 document it reads), internal/answer (the table of
// answers it shares with the middleware) and internal/senderclock (its
// clock), themselves standard library only, so a sender does not inherit the middleware or any store.
func TestImportsOnlyStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		switch p {
		case "github.com/geoidem/geoidem/client", "github.com/geoidem/geoidem/problem",
			"github.com/geoidem/geoidem/internal/answer", "github.com/geoidem/geoidem/internal/senderclock":
		default:
			t.Errorf("package client depends on %s", p)
		}
	}
}
