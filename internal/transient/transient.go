// Package transient holds the part of the permanent-or-transient rule
// that every store shares: a connection lost, refused or timed out, and a
// context that ended. pgstore.Transient and redisstore.Transient add their
// driver's errors to it.
package transient

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
)

// Conn reports whether err is a lost or refused connection, a timeout or a
// cancellation: io.EOF, io.ErrUnexpectedEOF, net.ErrClosed, ECONNRESET,
// ECONNREFUSED, EPIPE, ECONNABORTED, any net.Error, context.DeadlineExceeded
// and context.Canceled, wrapped or not.
func Conn(err error) bool {
	var netErr net.Error
	switch {
	case err == nil:
		return false
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNABORTED), errors.As(err, &netErr):
		return true
	}
	return false
}
