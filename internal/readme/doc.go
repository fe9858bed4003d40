// Package readme holds no code: its tests keep README.md and the pages of
// docs/ true. Every ```go block must appear, line for line (leading
// indentation aside), inside an Example or Test function of some *_test.go
// file in the repository, where the compiler and usually the example's //
// Output check it; every command of a shell block must work as written in
// a clone; every relative link must name a file, and a heading or id, the
// repository has. Edit a block and its Example together.
package readme
