package contracttest_test

import (
	"bytes"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/middleware/contracttest"
)

func TestRunHandler(t *testing.T) {
	h := &ingest{work: 20 * time.Millisecond}
	contracttest.Run(t, contracttest.Target{
		Handler:    wrapped(t, newStore(), h),
		Path:       "/features",
		Executions: h.executions,
	})
}

func TestRunURL(t *testing.T) {
	h := &ingest{work: 20 * time.Millisecond}
	srv := httptest.NewServer(wrapped(t, newStore(), h))
	defer srv.Close()
	contracttest.Run(t, contracttest.Target{
		URL:        srv.URL + "/",
		Path:       "features",
		Executions: h.executions,
	})
}

// Without Executions, the suite judges by the replay header alone, and
// still passes against a correct receiver.
func TestRunWithoutExecutions(t *testing.T) {
	contracttest.Run(t, contracttest.Target{Handler: wrapped(t, newStore(), new(ingest))})
}

// brokenEnv names the broken target TestBrokenTarget runs the suite
// against; it runs only in the subprocess TestSuiteFails starts.
const brokenEnv = "CONTRACTTEST_BROKEN_TARGET"

// brokenTargets are receivers that break the contract, and the rules that
// must catch them. Every other rule must pass: a suite that fails
// everything would prove nothing.
var brokenTargets = map[string]struct {
	target func(t *testing.T) contracttest.Target
	fail   []string
}{
	// The handler without the middleware: nothing is idempotent.
	"bare": {
		target: func(t *testing.T) contracttest.Target {
			h := new(ingest)
			return contracttest.Target{Handler: h, Executions: h.executions}
		},
		fail: []string{"LostAcknowledgementIsReplayed", "ConcurrentDuplicatesExecuteOnce", "KeyReuseWithAnotherPayloadIs422",
			"InvalidGeometryIs422AndNotRetried", "MissingKeyIs400", "MalformedKeyIs400", "ReplayCarriesNoSetCookie"},
	},
	// The middleware in front of a store that keeps nothing: keys are
	// parsed and bodies validated, but every request runs the handler.
	"forgetful": {
		target: func(t *testing.T) contracttest.Target {
			h := new(ingest)
			return contracttest.Target{Handler: wrapped(t, new(forgetfulStore), h), Executions: h.executions}
		},
		fail: []string{"LostAcknowledgementIsReplayed", "ConcurrentDuplicatesExecuteOnce", "KeyReuseWithAnotherPayloadIs422", "ReplayCarriesNoSetCookie"},
	},
	// The same, without Executions: the replay header alone must catch it.
	"forgetful-uncounted": {
		target: func(t *testing.T) contracttest.Target {
			return contracttest.Target{Handler: wrapped(t, new(forgetfulStore), new(ingest))}
		},
		fail: []string{"LostAcknowledgementIsReplayed", "ConcurrentDuplicatesExecuteOnce", "KeyReuseWithAnotherPayloadIs422", "ReplayCarriesNoSetCookie"},
	},
	// The middleware in front of a store whose Claim checks, then sets:
	// sequential retries are fine, concurrent duplicates all run.
	"check-then-set": {
		target: func(t *testing.T) contracttest.Target {
			h := new(ingest)
			return contracttest.Target{Handler: wrapped(t, new(checkThenSetStore), h), Executions: h.executions}
		},
		fail: []string{"ConcurrentDuplicatesExecuteOnce"},
	},
	// A correct middleware behind a wrapper that puts a cookie on replays.
	"cookie-on-replay": {
		target: func(t *testing.T) contracttest.Target {
			h := new(ingest)
			return contracttest.Target{Handler: cookieOnReplay(wrapped(t, newStore(), h)), Executions: h.executions}
		},
		fail: []string{"ReplayCarriesNoSetCookie"},
	},
	// A middleware without a validator, where the contract asks for one.
	"no-validator": {
		target: func(t *testing.T) contracttest.Target {
			h := new(ingest)
			return contracttest.Target{Handler: wrappedWithout(t, h), Executions: h.executions}
		},
		fail: []string{"InvalidGeometryIs422AndNotRetried"},
	},
}

// TestBrokenTarget runs the suite against one broken target, named by
// $CONTRACTTEST_BROKEN_TARGET, and is expected to fail. Without the
// variable it does nothing.
func TestBrokenTarget(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		t.Skip("run by TestSuiteFails in a subprocess")
	}
	b, ok := brokenTargets[name]
	if !ok {
		t.Fatalf("no broken target %q", name)
	}
	contracttest.Run(t, b.target(t))
}

var resultRE = regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): TestBrokenTarget/(\w+) `)

// TestSuiteFails proves that the suite can fail: against each broken
// target, exactly the rules it breaks fail, with messages that name the
// broken rule.
func TestSuiteFails(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip("in the subprocess")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range brokenTargets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(exe, "-test.run=^TestBrokenTarget$", "-test.v", "-test.count=1", "-test.timeout=60s")
			cmd.Env = append(os.Environ(), brokenEnv+"="+name)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatalf("the suite against %s: %v, want it to fail\n%s", name, err, out.String())
			}
			var failed, passed []string
			for _, m := range resultRE.FindAllStringSubmatch(out.String(), -1) {
				switch m[1] {
				case "FAIL":
					failed = append(failed, m[2])
				case "PASS":
					passed = append(passed, m[2])
				}
			}
			want := slices.Sorted(slices.Values(b.fail))
			slices.Sort(failed)
			if !slices.Equal(failed, want) {
				t.Errorf("against %s, the rules that failed are %q, want %q\npassed: %q\n%s", name, failed, want, passed, out.String())
			}
			if len(failed)+len(passed) < 8 {
				t.Errorf("against %s, %d rules reported, want 8\n%s", name, len(failed)+len(passed), out.String())
			}
			if n := strings.Count(out.String(), "RULE BROKEN: "); n < len(want) {
				t.Errorf("against %s, %d failure messages name a broken rule, want at least %d\n%s", name, n, len(want), out.String())
			}
			if testing.Verbose() {
				t.Logf("the suite against %s:\n%s", name, out.String())
			}
		})
	}
}
