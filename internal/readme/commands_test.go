package readme_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// module is the library's module path: it is not published, so `go
// install module/...@version` cannot work for a reader.
const module = "github.com/geoidem/geoidem"

// command is one shell command of a README ```sh, ```bash or ```console
// block (in a console block, a line after "$ "), continuation lines joined.
type command struct {
	line int // README line where it starts
	text string
}

// TestShellCommandsAreValid fails for every command of the shell blocks of
// README.md and docs/*.md that cannot work as written in a clone of the
// repository: a `go run`, `go build`, `go test`, `go vet` or `go install`
// of a package that does not exist, a `go install` of this unpublished
// module at a version, a flag our command (a `go run ./X` or `geoidem`) does
// not define, an argument naming a file the repository does not have, or a
// script that is not there. Commands of other programs (curl, …) are not
// checked.
func TestShellCommandsAreValid(t *testing.T) {
	flags := map[string]map[string]bool{}
	for _, p := range pages(t) {
		cmds := shellCommands(p.text)
		if len(cmds) == 0 && p.name == "README.md" {
			t.Fatal("README.md has no shell command: the extraction is broken")
		}
		checked := 0
		for _, c := range cmds {
			for _, seg := range segments(shellWords(c.text)) {
				problems, ours := checkCommand(root, seg, flags)
				if ours {
					checked++
				}
				for _, pr := range problems {
					t.Errorf("%s:%d: %s\n\t%s", p.name, c.line, pr, c.text)
				}
			}
		}
		if checked == 0 && p.name == "README.md" {
			t.Error("no command of ours (go …, geoidem, scripts/…) found in README.md's shell blocks")
		}
	}
}

// shellCommands returns the commands of a page's shell blocks.
func shellCommands(readme []byte) []command {
	var (
		cmds    []command
		inBlock bool
		console bool
		cur     *command
	)
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case !inBlock && (line == "```sh" || line == "```bash" || line == "```shell" || line == "```console"):
			inBlock, console = true, line == "```console"
			continue
		case inBlock && line == "```":
			inBlock, cur = false, nil
			continue
		case !inBlock:
			continue
		}
		if cur != nil { // a continuation line
			cur.text += " " + strings.TrimSuffix(line, "\\")
			if !strings.HasSuffix(line, "\\") {
				cur = nil
			}
			continue
		}
		if console {
			var ok bool
			if line, ok = strings.CutPrefix(line, "$ "); !ok {
				continue // the command's output
			}
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmds = append(cmds, command{line: n, text: strings.TrimSuffix(line, "\\")})
		if strings.HasSuffix(line, "\\") {
			cur = &cmds[len(cmds)-1]
		}
	}
	return cmds
}

// shellWords splits a command line into words, honouring single and
// double quotes; an unquoted run of operator characters (|, &, ;, <, >:
// &&, 2>&1 …) is a word of its own, and an unquoted # at the start of a
// word ends the line.
func shellWords(s string) []string {
	var (
		words []string
		cur   strings.Builder
		inW   bool
		quote byte
	)
	flush := func() {
		if inW {
			words = append(words, cur.String())
			cur.Reset()
			inW = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inW = c, true
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inW:
			flush()
			return words
		case strings.IndexByte("|&;<>", c) >= 0:
			op := ""
			if (c == '<' || c == '>') && inW && strings.Trim(cur.String(), "0123456789") == "" {
				op, inW = cur.String(), false // 2>&1: the descriptor is the operator's
				cur.Reset()
			}
			flush()
			j := i
			for j < len(s) && strings.IndexByte("|&;<>", s[j]) >= 0 {
				j++
			}
			words = append(words, op+s[i:j])
			i = j - 1
		default:
			cur.WriteByte(c)
			inW = true
		}
	}
	flush()
	return words
}

// segments splits words at |, &&, ||, ; and &, and drops redirections
// (an operator with < or > and the word after it).
func segments(words []string) [][]string {
	var (
		segs [][]string
		cur  []string
	)
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case strings.ContainsAny(w, "<>") && strings.Trim(w, "<>&|;12") == "":
			i++ // the redirection's target
		case w == "|" || w == "||" || w == "&&" || w == ";" || w == "&":
			if len(cur) > 0 {
				segs = append(segs, cur)
			}
			cur = nil
		default:
			cur = append(cur, w)
		}
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

// goValueFlags are the go command's flags that take a value as the next
// word.
var goValueFlags = map[string]bool{
	"o": true, "run": true, "bench": true, "benchtime": true, "count": true, "timeout": true, "tags": true,
	"fuzz": true, "fuzztime": true, "ldflags": true, "gcflags": true, "p": true, "C": true, "cpu": true,
	"coverprofile": true, "covermode": true, "coverpkg": true, "skip": true, "exec": true, "mod": true,
}

// checkCommand checks one command (its words, without operators) of a
// clone at dir, and reports whether it was one of ours. flags caches the
// flags of each command package.
func checkCommand(dir string, words []string, flags map[string]map[string]bool) (problems []string, ours bool) {
	switch {
	case words[0] == "go" && len(words) > 1:
		return checkGo(dir, words[1], words[2:], flags), true
	case words[0] == "geoidem":
		return checkArgs(dir, "./cmd/geoidem", words[1:], flags), true
	case strings.HasPrefix(words[0], "scripts/") || strings.HasPrefix(words[0], "./scripts/"):
		if _, err := os.Stat(filepath.Join(dir, words[0])); err != nil {
			return []string{fmt.Sprintf("no script %s in the repository", words[0])}, true
		}
		return nil, true
	}
	return nil, false
}

// checkGo checks `go sub args…`.
func checkGo(dir, sub string, args []string, flags map[string]map[string]bool) (problems []string) {
	var pkgs []string
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if goValueFlags[name] && !hasValue {
			i++
		}
	}
	switch sub {
	case "run":
		if i >= len(args) {
			return []string{"go run of no package"}
		}
		if p := checkPackage(dir, args[i], true); p != "" {
			return []string{p}
		}
		return checkArgs(dir, args[i], args[i+1:], flags)
	case "install":
		for _, a := range args[i:] {
			path, version, versioned := strings.Cut(a, "@")
			switch {
			case versioned && (path == module || strings.HasPrefix(path, module+"/")):
				problems = append(problems, fmt.Sprintf("go install %s@%s: the module %s is not published; build from a clone: go build -o geoidem ./cmd/geoidem, or go install ./cmd/geoidem", path, version, module))
			case strings.HasPrefix(a, "."):
				if p := checkPackage(dir, a, true); p != "" {
					problems = append(problems, p)
				}
			}
		}
	case "build", "test", "vet":
		pkgs = args[i:]
		for _, a := range pkgs {
			if !strings.HasPrefix(a, ".") {
				continue
			}
			if p := checkPackage(dir, a, sub == "build" && strings.Contains(strings.Join(args, " "), "-o")); p != "" {
				problems = append(problems, p)
			}
		}
	}
	return problems
}

// checkPackage reports what is wrong with the package pattern pkg (./X or
// ./X/...) of a clone at dir: "" when it names a directory with Go files
// (a main package if main).
func checkPackage(dir, pkg string, main bool) string {
	rel := strings.TrimSuffix(strings.TrimSuffix(pkg, "..."), "/")
	d := filepath.Join(dir, rel)
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		return fmt.Sprintf("no package %s in the repository", pkg)
	}
	if strings.HasSuffix(pkg, "...") {
		return ""
	}
	name, err := packageName(d)
	switch {
	case err != nil:
		return fmt.Sprintf("package %s: %v", pkg, err)
	case name == "":
		return fmt.Sprintf("no Go files in %s", pkg)
	case main && name != "main":
		return fmt.Sprintf("%s is package %s, not a command", pkg, name)
	}
	return ""
}

// packageName returns the package clause of d's non-test Go files.
func packageName(d string) (string, error) {
	files, err := filepath.Glob(filepath.Join(d, "*.go"))
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly)
		if err != nil {
			return "", err
		}
		return af.Name.Name, nil
	}
	return "", nil
}

// fileArg matches an argument that names a file of the repository.
var fileArg = regexp.MustCompile(`^[\w./-]+\.(geojson|json|jsonl|ndjson|csv|txt|sql|yaml|yml|toml|go)$`)

// checkArgs checks the arguments of our command pkg: every -flag is one
// the package defines (with the value after it, unless it is a bool flag),
// and every argument after the flags that names a file names one that
// exists. Leading words that are not flags and name no file are taken as
// subcommands (geoidem keys get …).
func checkArgs(dir, pkg string, args []string, cache map[string]map[string]bool) (problems []string) {
	defined, ok := cache[pkg]
	if !ok {
		var err error
		if defined, err = definedFlags(filepath.Join(dir, pkg)); err != nil {
			return []string{fmt.Sprintf("flags of %s: %v", pkg, err)}
		}
		cache[pkg] = defined
	}
	i := 0
	for i < len(args) && !strings.HasPrefix(args[i], "-") && !fileArg.MatchString(args[i]) {
		i++ // subcommands
	}
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, known := defined[name]
		switch {
		case !known:
			problems = append(problems, fmt.Sprintf("%s has no flag -%s", pkg, name))
		case takesValue && !hasValue:
			i++
		}
	}
	for ; i < len(args); i++ {
		if a := args[i]; fileArg.MatchString(a) {
			if _, err := os.Stat(filepath.Join(dir, a)); err != nil {
				problems = append(problems, fmt.Sprintf("%s: no file %s in the repository (the command runs from its root)", pkg, a))
			}
		}
	}
	return problems
}

// boolDefiners define flags that take no value.
var boolDefiners = map[string]bool{"Bool": true, "BoolVar": true, "BoolFunc": true}

// definers are the flag package's functions and FlagSet methods that
// define a flag, with the index of the name among their arguments.
var definers = map[string]int{
	"Bool": 0, "Int": 0, "Int64": 0, "Uint": 0, "Uint64": 0, "Float64": 0, "String": 0, "Duration": 0,
	"Func": 0, "BoolFunc": 0,
	"BoolVar": 1, "IntVar": 1, "Int64Var": 1, "UintVar": 1, "Uint64Var": 1, "Float64Var": 1, "StringVar": 1,
	"DurationVar": 1, "TextVar": 1, "Var": 1,
}

// definedFlags reads the flags the command in d defines: every call of a
// flag-defining function or method whose name argument is a string
// literal, in its non-test files, mapped to whether it takes a value. It
// is the union over the command's flag sets (geoidem's subcommands share
// one list): a flag of another subcommand passes.
func definedFlags(d string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(d, "*.go"))
	if err != nil {
		return nil, err
	}
	flags := map[string]bool{"h": false, "help": false}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(af, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			at, ok := definers[sel.Sel.Name]
			if !ok || len(call.Args) <= at+1 {
				return true
			}
			lit, ok := call.Args[at].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if name, err := strconv.Unquote(lit.Value); err == nil && name != "" {
				flags[name] = !boolDefiners[sel.Sel.Name]
			}
			return true
		})
	}
	return flags, nil
}
