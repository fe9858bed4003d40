package geojson

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/internal/testkit"
)

var updateProblemDocs = flag.Bool("update-problemdocs", false,
	"rewrite testdata/problemdocs.golden (only when a problem document is meant to change)")

// problemDocsGolden holds, for every document of problemDocCorpus, its
// length and SHA-256, captured before the documents were built with
// package problem's renderer: the bytes of every document must stay the
// same.
const problemDocsGolden = "testdata/problemdocs.golden"

type namedErr struct {
	name string
	err  interface{ ProblemJSON() []byte }
}

// problemDocCorpus returns the errors whose problem documents are
// compared byte for byte: the rule cases, the geojsonhint corpus, hostile
// bodies, and errors built by hand with empty, long, HTML and invalid
// UTF-8 members.
func problemDocCorpus(t *testing.T) []namedErr {
	t.Helper()
	var out []namedErr
	add := func(name string, err error) {
		if err == nil {
			return
		}
		var pj interface{ ProblemJSON() []byte }
		if !errors.As(err, &pj) {
			t.Fatalf("%s: error %T lacks ProblemJSON", name, err)
		}
		out = append(out, namedErr{name, pj})
	}
	for _, c := range ruleCases {
		add("rule/"+c.name, Validate([]byte(c.doc), c.opts))
	}
	files, err := filepath.Glob(filepath.Join("testdata", "geojsonhint", "*", "*.geojson"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no geojsonhint files: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		add("geojsonhint/"+filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), Validate(data, Options{}))
	}
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		add("bomb/"+strconv.Itoa(size), Validate(testkit.ProblemBomb(size, 100), Options{}))
	}
	add("escaped-name", Validate([]byte(`{"type":"Feature","geometry":null,"properties":{"`+strings.Repeat(`\u003c`, 150_000)+
		`":[`+strings.TrimSuffix(strings.Repeat("1e400,", 100), ",")+`]}}`), Options{}))
	for _, n := range []int{1, 3, 1000} {
		add("max-problems/"+strconv.Itoa(n), Validate(testkit.ProblemBomb(4<<10, 50), Options{MaxProblems: n}))
	}
	// Nested member names made of the parts that make pointers long, over
	// arrays of bad values.
	names := []string{"<", `\"`, `\u0001`, "~", "/", "é", "\xff", `\ud800`, "a", "&", "~1", "~0"}
	bads := []string{"1e400", `"x"`, "[1e999]", "{}", "null", "true"}
	for i, name := range names {
		for j, bad := range bads {
			depth := 1 + (i+j)%7
			key := `{"` + strings.Repeat(name, 1+(i*j*97)%5000) + `":`
			body := `{"type":"Feature","geometry":{"type":"Point","coordinates":[1e400,1e400]},"properties":` +
				strings.Repeat(key, depth) + "[" + strings.Repeat(bad+",", 10*i+20*j) + "1e400]" + strings.Repeat("}", depth) +
				`,"bbox":[1e400],"crs":7}`
			add("nested/"+strconv.Itoa(i)+"/"+strconv.Itoa(j), Validate([]byte(body), Options{}))
		}
	}
	for i, s := range []string{`{`, `{"type":`, `[1,2`, `{"a" 1}`, "\xff", `{"a":<}`, `{"type":"Point","coordinates":[1,2]}x`, ``} {
		add("syntax/"+strconv.Itoa(i), Validate([]byte(s), Options{}))
	}

	// Errors built by hand.
	long := strings.Repeat("é<&>", 5000)
	hostile := []string{"", " ", "text/plain", `<script>&"\`, "\xff\xfe", "a\u2028b\u0000", long, strings.Repeat("~", 3000)}
	for i, s := range hostile {
		add("syntax-msg/"+strconv.Itoa(i), &SyntaxError{Offset: i * 1000, Msg: s})
		add("media-type/"+strconv.Itoa(i), mediaTypeError(s))
		add("problem/"+strconv.Itoa(i), &ValidationError{Violations: []Violation{{Pointer: s, Rule: s, Message: s}}})
		add("problem-truncated/"+strconv.Itoa(i), &ValidationError{Violations: []Violation{{Pointer: "/" + s, Rule: "r", Message: s, Truncated: true}}, Truncated: true})
	}
	add("validation/zero", &ValidationError{})
	add("validation/empty-problems", &ValidationError{Violations: []Violation{}})
	add("validation/truncated-only", &ValidationError{Truncated: true})
	add("validation/empty-problem", &ValidationError{Violations: []Violation{{}}})
	add("syntax/zero", &SyntaxError{})
	add("media-type/zero", mediaTypeError(""))
	for _, n := range []int{2, 100, 10_000} {
		probs := make([]Violation, n)
		for i := range probs {
			probs[i] = Violation{Pointer: "/features/" + strconv.Itoa(i) + "/" + long[:i%len(long)], Rule: RuleNumberTooLarge, Message: "message " + long[:(7*i)%len(long)]}
		}
		add("many/"+strconv.Itoa(n), &ValidationError{Violations: probs})
		add("many-truncated/"+strconv.Itoa(n), &ValidationError{Violations: probs, Truncated: true})
	}
	return out
}

// TestProblemDocumentsGolden checks that every problem document of the
// corpus is byte for byte what it was (see problemDocsGolden) and has
// every standard member, "detail" included.
func TestProblemDocumentsGolden(t *testing.T) {
	var got bytes.Buffer
	for _, c := range problemDocCorpus(t) {
		doc := c.err.ProblemJSON()
		var d map[string]json.RawMessage
		if err := json.Unmarshal(doc, &d); err != nil {
			t.Fatalf("%s: problem document is not JSON: %v", c.name, err)
		}
		for _, m := range []string{"type", "title", "status", "detail"} {
			if _, ok := d[m]; !ok {
				t.Errorf("%s: problem document lacks %q: %.200s", c.name, m, doc)
			}
		}
		sum := sha256.Sum256(doc)
		fmt.Fprintf(&got, "%s %d %s\n", hex.EncodeToString(sum[:]), len(doc), c.name)
	}
	if *updateProblemDocs {
		if err := os.WriteFile(problemDocsGolden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(problemDocsGolden)
	if err != nil {
		t.Fatal(err)
	}
	gotLines, wantLines := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
	if len(gotLines) != len(wantLines) {
		t.Fatalf("%d documents, golden file has %d", len(gotLines)-1, len(wantLines)-1)
	}
	for i := range gotLines {
		if gotLines[i] != wantLines[i] {
			t.Errorf("document changed:\n got %s\nwant %s", gotLines[i], wantLines[i])
		}
	}
}
