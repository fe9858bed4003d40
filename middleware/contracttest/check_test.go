package contracttest_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/geoidem/geoidem/middleware/contracttest"
)

// Check, without a *testing.T, passes a correct receiver: every rule holds.
func TestCheckPasses(t *testing.T) {
	h := &ingest{work: 20 * time.Millisecond}
	rep, err := contracttest.Check(t.Context(), contracttest.Target{
		Handler:    wrapped(t, newStore(), h),
		Path:       "/features",
		Executions: h.executions,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || count(rep, contracttest.Pass) != 9 || count(rep, contracttest.Fail) != 0 || count(rep, contracttest.NotApplicable) != 0 || len(rep.Rules) != 9 {
		t.Fatalf("report %+v, want 9 rules passed", rep)
	}
}

// Check fails exactly the rules Run fails, against every broken target of
// TestSuiteFails, with messages that name the broken rule: one definition
// of the rules.
func TestCheckFailsTheRulesRunFails(t *testing.T) {
	for name, b := range brokenTargets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rep, err := contracttest.Check(t.Context(), b.target(t))
			if err != nil {
				t.Fatal(err)
			}
			var failed []string
			for _, r := range rep.Rules {
				if r.Outcome != contracttest.Fail {
					continue
				}
				failed = append(failed, r.Name)
				if !slices.ContainsFunc(r.Failures, func(m string) bool {
					return strings.HasPrefix(m, "RULE BROKEN: ") || strings.Contains(m, ": RULE BROKEN: ")
				}) {
					t.Errorf("%s failed with no message naming the rule: %q", r.Name, r.Failures)
				}
			}
			want := slices.Sorted(slices.Values(b.fail))
			slices.Sort(failed)
			if !slices.Equal(failed, want) || rep.OK() || count(rep, contracttest.Fail) != len(want) {
				t.Errorf("against %s, Check failed %q (report %d failed), want %q", name, failed, count(rep, contracttest.Fail), want)
			}
		})
	}
}

// A receiver that answers 201 to everything, with no middleware at all,
// fails the rules that need a replay, a 422 or a 400.
func TestCheckFailsAnswerAll201(t *testing.T) {
	all201 := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	rep, err := contracttest.Check(t.Context(), contracttest.Target{Handler: all201})
	if err != nil {
		t.Fatal(err)
	}
	outcome := map[string]contracttest.Outcome{}
	for _, r := range rep.Rules {
		outcome[r.Name] = r.Outcome
	}
	for _, name := range []string{"LostAcknowledgementIsReplayed", "ConcurrentDuplicatesExecuteOnce", "KeyReuseWithAnotherPayloadIs422",
		"InvalidGeometryIs422AndNotRetried", "MissingKeyIs400", "MalformedKeyIs400"} {
		if outcome[name] != contracttest.Fail {
			t.Errorf("%s: %q, want fail", name, outcome[name])
		}
	}
	if rep.OK() {
		t.Errorf("the report is OK")
	}
}

// A skipped rule is reported not applicable, with the reason, and the
// report is still OK.
func TestCheckNotApplicable(t *testing.T) {
	h := new(ingest)
	rep, err := contracttest.Check(t.Context(), contracttest.Target{Handler: wrappedWithout(t, h), SkipInvalidGeometry: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || count(rep, contracttest.NotApplicable) != 1 || count(rep, contracttest.Pass) != 8 {
		t.Fatalf("report %+v, want 8 passed and 1 not applicable", rep)
	}
	for _, r := range rep.Rules {
		if r.Name == "InvalidGeometryIs422AndNotRetried" && (r.Outcome != contracttest.NotApplicable || !strings.Contains(r.Reason, "SkipInvalidGeometry")) {
			t.Errorf("%s: %q (%q), want not applicable naming SkipInvalidGeometry", r.Name, r.Outcome, r.Reason)
		}
	}
}

func TestCheckUnusableOrUnreachable(t *testing.T) {
	if _, err := contracttest.Check(t.Context(), contracttest.Target{}); err == nil {
		t.Error("Check of an empty Target: no error")
	}
	if _, err := contracttest.Check(t.Context(), contracttest.Target{URL: "ftp://x"}); err == nil {
		t.Error("Check of an ftp URL: no error")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = contracttest.Check(t.Context(), contracttest.Target{URL: "http://" + addr})
	if !errors.Is(err, contracttest.ErrUnreachable) {
		t.Errorf("Check of a closed port: %v, want ErrUnreachable", err)
	}
}

// A cancelled context ends Check with every rule failed, and soon.
func TestCheckCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rep, err := contracttest.Check(ctx, contracttest.Target{Handler: wrapped(t, newStore(), new(ingest))})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() {
		t.Errorf("report OK after cancel: %+v", rep)
	}
}

// count returns how many of rep's rules ended with outcome o.
func count(rep contracttest.Report, o contracttest.Outcome) int {
	n := 0
	for _, r := range rep.Rules {
		if r.Outcome == o {
			n++
		}
	}
	return n
}
