package readme_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository's root, relative to this package's directory.
const root = "../.."

// readREADME returns the repository's README.md.
func readREADME(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// page is one Markdown page whose blocks the tests check: README.md or a
// page of docs/.
type page struct {
	name string // relative to the repository's root, slash-separated
	text []byte
}

// pages returns README.md and every docs/*.md.
func pages(t *testing.T) []page {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	ps := []page{{name: "README.md", text: readREADME(t)}}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, n)
		ps = append(ps, page{name: filepath.ToSlash(rel), text: b})
	}
	return ps
}

// block is one ```go block of a page.
type block struct {
	line    int    // README line of the block's first code line
	section string // the heading the block is under
	lines   []string
}

// function is the body of one Example or Test function.
type function struct {
	name  string // file:line Name
	lines []string
}

// TestGoBlocksAreExamples fails for every ```go block of README.md and of
// docs/*.md that appears verbatim (modulo each line's leading indentation)
// in no Example or Test function of the repository's *_test.go files.
func TestGoBlocksAreExamples(t *testing.T) {
	funcs := exampleFunctions(t)
	for _, p := range pages(t) {
		blocks := goBlocks(p.text)
		if len(blocks) == 0 && p.name == "README.md" {
			t.Fatal("README.md has no ```go block: the extraction is broken")
		}
		for _, b := range blocks {
			checkBlock(t, p.name, b, funcs)
		}
	}
}

// checkBlock reports b, a go block of page name, unless some function of
// funcs holds it whole.
func checkBlock(t *testing.T, name string, b block, funcs []function) {
	t.Helper()
	best, bestLen := "", 0
	for _, f := range funcs {
		n := longestMatch(f.lines, b.lines)
		if n == len(b.lines) {
			return
		}
		if n > bestLen {
			best, bestLen = f.name, n
		}
	}
	if bestLen == 0 {
		t.Errorf("%s:%d: the go block under %q (%d lines) is in no Example or Test function: none has its first line %q",
			name, b.line, b.section, len(b.lines), b.lines[0])
		return
	}
	t.Errorf("%s:%d: the go block under %q (%d lines) is in no Example or Test function; "+
		"closest: %s, which has its first %d lines but not line %d: %q",
		name, b.line, b.section, len(b.lines), best, bestLen, b.line+bestLen, b.lines[bestLen])
}

// goBlocks returns a page's ```go blocks, each line without its leading
// indentation.
func goBlocks(readme []byte) []block {
	var (
		blocks  []block
		cur     *block
		section string
	)
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "#"):
			section = line
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &block{line: n + 1, section: section}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, unindent(line))
		}
	}
	return blocks
}

// exampleFunctions returns the body of every Example and Test function in
// the repository's *_test.go files.
func exampleFunctions(t *testing.T) []function {
	t.Helper()
	var funcs []function
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil || fd.Recv != nil ||
				!(strings.HasPrefix(fd.Name.Name, "Example") || strings.HasPrefix(fd.Name.Name, "Test")) {
				continue
			}
			body := src[fset.Position(fd.Body.Lbrace).Offset+1 : fset.Position(fd.Body.Rbrace).Offset]
			var lines []string
			for l := range strings.SplitSeq(string(body), "\n") {
				lines = append(lines, unindent(l))
			}
			rel, _ := filepath.Rel(root, path)
			funcs = append(funcs, function{
				name:  fmt.Sprintf("%s:%d %s", filepath.ToSlash(rel), fset.Position(fd.Pos()).Line, fd.Name.Name),
				lines: lines,
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(funcs) == 0 {
		t.Fatal("no Example or Test function found under the repository root")
	}
	return funcs
}

// longestMatch returns the longest run of want's leading lines that
// appears in body.
func longestMatch(body, want []string) (n int) {
	for i := range body {
		k := 0
		for k < len(want) && i+k < len(body) && body[i+k] == want[k] {
			k++
		}
		if n = max(n, k); n == len(want) {
			break
		}
	}
	return n
}

func unindent(line string) string { return strings.TrimLeft(line, " \t") }

// TestGoBlocks checks the extraction on a small README: only go blocks,
// their first code line, their heading and unindented lines.
func TestGoBlocks(t *testing.T) {
	readme := "# t\n\n## A\n\n```sh\nx := 1\n```\n\n1. list\n\n   ```go\n   a := 1\n   \tb(a)\n   ```\n## B\n```go\nc()\n```\n"
	got := goBlocks([]byte(readme))
	want := []block{
		{line: 12, section: "## A", lines: []string{"a := 1", "b(a)"}},
		{line: 17, section: "## B", lines: []string{"c()"}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("goBlocks = %v, want %v", got, want)
	}
	if n := longestMatch([]string{"x", "a := 1", "b(a)", "y"}, want[0].lines); n != 2 {
		t.Errorf("longestMatch of a present block = %d, want 2", n)
	}
	if n := longestMatch([]string{"a := 1", "c()"}, want[0].lines); n != 1 {
		t.Errorf("longestMatch of a block's first line only = %d, want 1", n)
	}
}
