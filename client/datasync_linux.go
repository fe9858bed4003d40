package client

import (
	"os"
	"syscall"
)

// datasync flushes f's data, and the metadata needed to read it back (its
// size), to stable storage: fdatasync(2), which skips what fsync would
// also write for the file's timestamps.
func datasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if cerr := rc.Control(func(fd uintptr) {
		for {
			if err = syscall.Fdatasync(int(fd)); err != syscall.EINTR {
				return
			}
		}
	}); cerr != nil {
		return cerr
	}
	if err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	return nil
}

// fallocate reserves size bytes of f from off, growing the file: the
// reserved part reads as zeros until it is written.
func fallocate(f *os.File, off, size int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if cerr := rc.Control(func(fd uintptr) {
		for {
			if err = syscall.Fallocate(int(fd), 0, off, size); err != syscall.EINTR {
				return
			}
		}
	}); cerr != nil {
		return cerr
	}
	if err != nil {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
	return nil
}
