// Package readme holds no code: its test keeps the Go code blocks of the
// repository's README.md true. Every ```go block of README.md must appear,
// line for line (leading indentation aside), inside an Example or Test
// function of some *_test.go file in the repository, where the compiler and
// usually the example's // Output check it. Edit a README block and its
// Example together.
package readme
