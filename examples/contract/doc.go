// Package contract holds tests, no code: the middleware's contract checked
// against senders that are not geoidem's own, such as
// github.com/hashicorp/go-retryablehttp. They live in the examples module
// so that the library's go.mod does not require those senders.
package contract
