package answer_test

import (
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/internal/answer"
)

var update = flag.Bool("update", false, "rewrite the table in docs/answers.md from answer.Table")

// Markers around the generated table in docs/answers.md.
const (
	begin = "<!-- table: generated from internal/answer.Table; do not edit by hand -->"
	end   = "<!-- end of table -->"
)

// markdown renders the table as the page shows it.
func markdown() string {
	var b strings.Builder
	b.WriteString("| status | problem type or transport error | given by | when | key | Retry-After from | retried | what the sender does |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range answer.Table {
		status := "any"
		if r.Status != answer.AnyStatus {
			status = fmt.Sprint(r.Status)
		}
		what := r.Transport
		if r.Problem != "" {
			what = "[`" + r.Problem + "`](problems.md#" + r.Problem + ")"
		} else if what == "" {
			what = "(the handler's own)"
		}
		if r.Transport != "" {
			status = "none"
		}
		ra := r.RetryAfter
		if ra == "" {
			ra = "none"
		}
		retried := "no"
		if r.Retry {
			retried = "**yes**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", status, what, r.By, r.When, r.Key, ra, retried, r.Do)
	}
	return b.String()
}

// TestPageIsTheTable: docs/answers.md shows answer.Table as it is (go test
// ./internal/answer -update rewrites it).
func TestPageIsTheTable(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "answers.md")
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("docs/answers.md has no %q … %q section", begin, end)
	}
	want := begin + "\n\n" + markdown() + "\n" + end
	if got := s[i : j+len(end)]; got != want {
		if *update {
			if err := os.WriteFile(path, []byte(s[:i]+want+s[j+len(end):]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("docs/answers.md's table is not answer.Table; run go test ./internal/answer -update")
	}
}

// TestTableFollowsTheRules: every answer's row says it is retried exactly
// when the retry rule says so, and released exactly when it is retried:
// a retried answer that was recorded would be replayed to its own retry,
// and a released answer that is not retried would be dead-lettered though
// the same bytes may succeed. Two exceptions, each its own Key: a
// validator's refusal is released but final (the same bytes get the same
// answer; Refused), and the replay of a corrupt record is a 500, retried
// though recorded (the record answers the same until its retention ends).
// A held key (an outcome nobody knows) must be retried: once an operator
// releases it, the retry is what delivers the event.
func TestTableFollowsTheRules(t *testing.T) {
	for _, r := range answer.Table {
		name := fmt.Sprintf("%d %s %s %q", r.Status, r.Problem, r.Transport, r.When)
		if r.Transport != "" {
			if r.Key != answer.AsLeft && r.Retry {
				t.Errorf("%s: a retried transport error leaves the key as the attempt left it", name)
			}
			continue
		}
		if r.Status != answer.AnyStatus {
			if got := answer.RetryStatus(r.Status, r.RetryAfter != ""); got != r.Retry {
				t.Errorf("%s: the row says retried %v, the rule %v", name, r.Retry, got)
			}
		}
		switch r.Key {
		case answer.Released:
			if !r.Retry {
				t.Errorf("%s: released, but the sender gives up on it", name)
			}
		case answer.Refused:
			if r.Retry {
				t.Errorf("%s: the same bytes get the same answer, yet it is retried", name)
			}
		case answer.Recorded:
			if r.Retry && !(r.Status == http.StatusInternalServerError && r.Problem == "response-not-recorded") {
				t.Errorf("%s: recorded, yet retried: the retry is replayed the answer it retries", name)
			}
		case answer.Held:
			if !r.Retry {
				t.Errorf("%s: held until released, but the sender gives up on it before the release", name)
			}
		case answer.AsLeft:
			t.Errorf("%s: only a transport error leaves the key as the attempt left it", name)
		}
		if r.Retry && r.Do == "" || r.By == "" || r.When == "" {
			t.Errorf("%s: incomplete row", name)
		}
	}
}

// TestEveryProblemTypeHasARow: every problem type docs/problems.md lists
// has a row in the table (and so on docs/answers.md), and every problem type
// in the table is listed there.
func TestEveryProblemTypeHasARow(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "problems.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| <a id="([^"]+)"></a>`).FindAllStringSubmatch(string(page), -1) {
		listed[m[1]] = true
	}
	inTable := map[string]bool{}
	for _, r := range answer.Table {
		if r.Problem != "" {
			inTable[r.Problem] = true
			if !listed[r.Problem] {
				t.Errorf("problem type %s is in the table but not in docs/problems.md", r.Problem)
			}
		}
	}
	for p := range listed {
		if !inTable[p] {
			t.Errorf("problem type %s is in docs/problems.md but has no row in the table", p)
		}
	}
	if len(listed) == 0 {
		t.Fatal("no problem type found in docs/problems.md")
	}
}

// TestRetriedIsRetryStatusOfAReadableRetryAfter: Retried reads the header
// value as a sender does.
func TestRetriedIsRetryStatusOfAReadableRetryAfter(t *testing.T) {
	for _, c := range []struct {
		status int
		ra     string
		want   bool
	}{
		{409, "", false}, {409, "1", true}, {409, " 30 ", true}, {409, "Wed, 21 Oct 2015 07:28:00 GMT", true},
		{409, "soon", false}, {409, "-1", false}, {409, "1.5", false},
		{501, "", true}, {507, "", true}, {599, "", true}, {408, "", true}, {429, "soon", true},
		{400, "1", false}, {422, "1", false}, {200, "", false}, {600, "", false},
	} {
		if got := answer.Retried(c.status, c.ra); got != c.want {
			t.Errorf("Retried(%d, %q) = %v, want %v", c.status, c.ra, got, c.want)
		}
	}
}

// problemInCode finds a problem type named in Go source: a string literal
// ending in problems.md#<name>, or a TypeBase constant plus "<name>"
// (problem.TypeBase).
var problemInCode = regexp.MustCompile(`problems\.md#([a-z0-9-]+)"|TypeBase \+ "([a-z0-9-]+)"`)

// TestEveryProblemTypeInCodeHasARow: every problem type any Go file of the
// repository names (its library, examples and bench; tests aside) has a row
// in the table and is listed in docs/problems.md, so no package can answer
// with a type a sender cannot look up.
func TestEveryProblemTypeInCodeHasARow(t *testing.T) {
	root := filepath.Join("..", "..")
	page, err := os.ReadFile(filepath.Join(root, "docs", "problems.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| <a id="([^"]+)"></a>`).FindAllStringSubmatch(string(page), -1) {
		listed[m[1]] = true
	}
	inTable := map[string]bool{}
	for _, r := range answer.Table {
		inTable[r.Problem] = true
	}
	found := map[string]string{} // name -> a file naming it
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range problemInCode.FindAllStringSubmatch(string(src), -1) {
			found[m[1]+m[2]] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) < len(listed)/2 {
		t.Fatalf("found only %d problem types in the code: %v", len(found), found)
	}
	for name, path := range found {
		if !inTable[name] {
			t.Errorf("problem type %s (%s) has no row in answer.Table", name, path)
		}
		if !listed[name] {
			t.Errorf("problem type %s (%s) is not listed in docs/problems.md", name, path)
		}
	}
}
