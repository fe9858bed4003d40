package keystore

import (
	"errors"
	"fmt"
)

// The status codes a Record may carry: final HTTP responses only. A record
// with any other status could not be replayed (net/http refuses to write a
// status below 100, and a 1xx is not a final answer), so every Store refuses
// it at completion rather than keep it for the whole retention.
const (
	MinStatusCode = 200
	MaxStatusCode = 599
)

// ErrInvalidStatus reports a Record whose StatusCode is outside
// [MinStatusCode, MaxStatusCode] (200–599). Every Store's Complete (and
// package pgstore's InTx and CompleteTx) fails with an error wrapping it,
// storing nothing and leaving the key held by its token; compare with
// errors.Is. It is a programming error of the caller (an unset StatusCode,
// a 1xx), never a store failure.
var ErrInvalidStatus = errors.New("keystore: record status code outside 200–599")

// Validate returns nil if r can be stored and replayed, and otherwise an
// error wrapping [ErrInvalidStatus] that names the status code.
func (r Record) Validate() error {
	if r.StatusCode < MinStatusCode || r.StatusCode > MaxStatusCode {
		return fmt.Errorf("%w: %d", ErrInvalidStatus, r.StatusCode)
	}
	return nil
}
