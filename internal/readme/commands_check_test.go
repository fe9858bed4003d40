package readme_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestShellCommands checks the extraction on a small README: sh and
// console blocks only, "$ " lines of a console block, continuation lines
// joined, comments dropped.
func TestShellCommands(t *testing.T) {
	readme := "```sh\ngo run ./a   # comment\n# only a comment\n\ngo test \\\n  ./...\n```\n" +
		"```go\nx := 1\n```\n```console\n$ geoidem keys stats\noutput line\n$ curl x\n```\n"
	got := fmt.Sprint(shellCommands([]byte(readme)))
	want := fmt.Sprint([]command{{2, "go run ./a   # comment"}, {5, "go test  ./..."}, {12, "geoidem keys stats"}, {14, "curl x"}})
	if got != want {
		t.Errorf("shellCommands = %s, want %s", got, want)
	}
	words := shellWords(`go run ./x -h 'a b' "c#d" e#f > out.json 2>&1 # note`)
	if got, want := strings.Join(words, "|"), "go|run|./x|-h|a b|c#d|e#f|>|out.json|2>&|1"; got != want {
		t.Errorf("shellWords = %s, want %s", got, want)
	}
	segs := segments(shellWords(`go run ./examples/ingest & geoidem contract -json > c.json`))
	if got, want := fmt.Sprint(segs), "[[go run ./examples/ingest] [geoidem contract -json]]"; got != want {
		t.Errorf("segments = %s, want %s", got, want)
	}
}

// TestShellCommandChecks: each kind of broken command is reported, and
// the working forms are not.
func TestShellCommandChecks(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want string // "" for no problem
	}{
		{"go run ./examples/validate geojson/testdata/geojsonhint/good/good-feature.geojson", ""},
		{"go run ./examples/validate bowtie.geojson", "no file bowtie.geojson"},
		{"go run ./examples/nosuch", "no package ./examples/nosuch"},
		{"go run ./middleware", "not a command"},
		{"go install github.com/geoidem/geoidem/cmd/geoidem@latest", "not published"},
		{"go install ./cmd/geoidem", ""},
		{"go build -o geoidem ./cmd/geoidem", ""},
		{"go build -o geoidem ./cmd/nosuch", "no package ./cmd/nosuch"},
		{"go test -race -count=1 -run TestX ./middleware/...", ""},
		{"go test ./nosuch/...", "no package ./nosuch/..."},
		{"geoidem contract -url http://127.0.0.1:8080 -path /features -json", ""},
		{"geoidem contract -url http://x -no-such-flag", "no flag -no-such-flag"},
		{"geoidem keys get -store redis://127.0.0.1:6379/0 -scope 'POST /features' evt_123", ""},
		{"go run ./examples/sender -url http://x -dead-letter failed.jsonl -bogus 3 f.geojson", "no flag -bogus"},
		{"go run ./examples/chaos -kill-sender 3", ""},
		{"scripts/test", ""},
		{"scripts/nosuch", "no script scripts/nosuch"},
		{"curl -si localhost:8080/features", ""},
	} {
		var got []string
		for _, seg := range segments(shellWords(tc.cmd)) {
			p, _ := checkCommand(root, seg, map[string]map[string]bool{})
			got = append(got, p...)
		}
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: %q, want no problem", tc.cmd, got)
		case tc.want != "" && !strings.Contains(strings.Join(got, "\n"), tc.want):
			t.Errorf("%s: %q, want a problem with %q", tc.cmd, got, tc.want)
		}
	}
}
