// Command apicount counts the exported identifiers of the library's public
// packages, as go/doc sees them: package-level functions, types,
// constants and variables, each type's methods and associated functions,
// its exported struct fields (embedded ones included) and its interface
// methods (not the interfaces it embeds). Test files, internal/, cmd/,
// scripts/, docs/, examples/, bench/ and testdata/ are left out; so are
// the nested modules under observe/ unless -observe asks for them.
//
//	cd bench && go run ./apicount [-v] [-observe] ..
//
// It prints one line per package and the total; -v lists the names.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	verbose := flag.Bool("v", false, "list every identifier")
	observe := flag.Bool("observe", false, "count the nested modules observe/promobserve and observe/otelobserve too")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	root, err := filepath.Abs(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicount:", err)
		os.Exit(2)
	}
	dirs, err := packageDirs(root, *observe)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicount:", err)
		os.Exit(2)
	}
	total := 0
	for _, d := range dirs {
		ids, err := exported(d)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apicount:", err)
			os.Exit(2)
		}
		if ids == nil {
			continue
		}
		rel, _ := filepath.Rel(root, d)
		fmt.Printf("%-28s %4d\n", filepath.ToSlash(rel), len(ids))
		if *verbose {
			for _, id := range ids {
				fmt.Println("   ", id)
			}
		}
		total += len(ids)
	}
	fmt.Printf("%-28s %4d\n", "total", total)
}

// packageDirs returns the directories under root that hold a public
// package's non-test Go files, sorted.
func packageDirs(root string, observe bool) ([]string, error) {
	skip := map[string]bool{"internal": true, "examples": true, "bench": true, "testdata": true, "cmd": true, "scripts": true, "docs": true}
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (skip[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if !observe && p != root {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // a nested module
				}
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			seen[filepath.Dir(p)] = true
		}
		return nil
	})
	dirs := make([]string, 0, len(seen))
	for d := range seen {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	return dirs, err
}

// exported returns the exported identifiers of the package in dir, nil for
// a main package.
func exported(dir string) ([]string, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if f.Name.Name == "main" {
			return nil, nil
		}
		files = append(files, f)
	}
	dp, err := doc.NewFromFiles(fset, files, dir)
	if err != nil {
		return nil, err
	}
	var ids []string
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				if ast.IsExported(n) {
					ids = append(ids, n)
				}
			}
		}
	}
	values(dp.Consts)
	values(dp.Vars)
	for _, f := range dp.Funcs {
		ids = append(ids, f.Name)
	}
	for _, t := range dp.Types {
		ids = append(ids, t.Name)
		values(t.Consts)
		values(t.Vars)
		for _, f := range t.Funcs {
			ids = append(ids, f.Name)
		}
		for _, m := range t.Methods {
			ids = append(ids, t.Name+"."+m.Name)
		}
		ids = append(ids, members(t)...)
	}
	return ids, nil
}

// members returns t's exported struct fields (embedded ones by their type's
// name) or its interface methods (not the interfaces it embeds), as
// Type.Name.
func members(t *doc.Type) []string {
	ts, ok := t.Decl.Specs[0].(*ast.TypeSpec)
	if !ok {
		return nil
	}
	var out []string
	var fields *ast.FieldList
	isInterface := false
	switch st := ts.Type.(type) {
	case *ast.StructType:
		fields = st.Fields
	case *ast.InterfaceType:
		fields, isInterface = st.Methods, true
	default:
		return nil
	}
	for _, f := range fields.List {
		for _, n := range f.Names {
			if n.IsExported() {
				out = append(out, t.Name+"."+n.Name)
			}
		}
		if len(f.Names) == 0 && !isInterface {
			e := f.Type
			if s, ok := e.(*ast.StarExpr); ok {
				e = s.X
			}
			var name string
			switch x := e.(type) {
			case *ast.Ident:
				name = x.Name
			case *ast.SelectorExpr:
				name = x.Sel.Name
			}
			if ast.IsExported(name) {
				out = append(out, t.Name+"."+name)
			}
		}
	}
	return out
}
