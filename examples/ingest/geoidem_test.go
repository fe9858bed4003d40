package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoidem/geoidem/standardwebhooks"
)

var (
	geoidemOnce sync.Once
	geoidemPath string
	geoidemErr  error
)

// geoidemBinary builds cmd/geoidem once per test run.
func geoidemBinary(t *testing.T) string {
	t.Helper()
	geoidemOnce.Do(func() {
		dir, err := os.MkdirTemp("", "geoidem-cli-")
		if err != nil {
			geoidemErr = err
			return
		}
		geoidemPath = filepath.Join(dir, "geoidem")
		if out, err := exec.Command("go", "build", "-o", geoidemPath, "github.com/geoidem/geoidem/cmd/geoidem").CombinedOutput(); err != nil {
			geoidemErr = err
			t.Logf("%s", out)
		}
	})
	if geoidemErr != nil {
		t.Fatalf("building cmd/geoidem: %v", geoidemErr)
	}
	return geoidemPath
}

// runGeoidem runs the geoidem command with args and returns its exit code
// and output.
func runGeoidem(t *testing.T, stdin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, geoidemBinary(t), args...)
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatalf("geoidem %q: %v", args, err)
	}
	return 0, out.String()
}

// TestGeoidemContract runs `geoidem contract`, as a process, against the
// service on every store: every rule passes but ReplayCarriesNoSetCookie,
// inconclusive (the service sets no cookie, so its replays could not carry
// one), and it exits 0.
func TestGeoidemContract(t *testing.T) {
	for _, st := range contractStores(t) {
		t.Run(st.name, func(t *testing.T) {
			url := start(t, st.args...)
			code, out := runGeoidem(t, "", "contract", "-url", url, "-path", "/features")
			if code != 0 || !strings.Contains(out, ": 8 pass, 0 fail, 0 not applicable, 1 inconclusive") || !strings.Contains(out, "inconclusive    ReplayCarriesNoSetCookie") {
				t.Fatalf("geoidem contract against the service on %s: exit %d, want 0, 8 rules passed and ReplayCarriesNoSetCookie inconclusive\n%s", st.name, code, out)
			}
		})
	}
}

// With -webhook-secret, against the service verifying Standard Webhooks:
// the key is the signed webhook-id, so the two Idempotency-Key rules do not
// apply, and every other rule passes but ReplayCarriesNoSetCookie
// (inconclusive: no cookie).
func TestGeoidemContractStandardWebhooks(t *testing.T) {
	secret := standardwebhooks.GenerateSecret().Encode()
	url := start(t, "-webhook-secret", secret)
	code, out := runGeoidem(t, "", "contract", "-url", url, "-path", "/features", "-webhook-secret", secret)
	if code != 0 || !strings.Contains(out, ": 6 pass, 0 fail, 2 not applicable, 1 inconclusive") ||
		!strings.Contains(out, "not applicable  MissingKeyIs400") || !strings.Contains(out, "not applicable  MalformedKeyIs400") {
		t.Fatalf("exit %d, want 0 with the two key rules not applicable\n%s", code, out)
	}
	// Unsigned, every delivery is refused: the rules fail, exit 1.
	if code, out := runGeoidem(t, "", "contract", "-url", url, "-path", "/features"); code != 1 {
		t.Fatalf("unsigned: exit %d, want 1\n%s", code, out)
	}
}
