package middleware

// MaxBackground is the bound on records and releases retried in the
// background at once, for the tests of package middleware_test.
const MaxBackground = maxBackground
