//go:build !linux

package client

import (
	"errors"
	"os"
)

// datasync flushes f to stable storage. Only Linux has fdatasync(2) here;
// elsewhere it is [os.File.Sync].
func datasync(f *os.File) error { return f.Sync() }

// fallocate reserves nothing here: the journal appends as it goes.
func fallocate(*os.File, int64, int64) error { return errors.ErrUnsupported }
