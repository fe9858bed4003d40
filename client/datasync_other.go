//go:build !linux

package client

import "os"

// datasync flushes f to stable storage. Only Linux has fdatasync(2) here;
// elsewhere it is [os.File.Sync].
func datasync(f *os.File) error { return f.Sync() }
