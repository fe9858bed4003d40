package main

import (
	"os"
	"syscall"
)

// datasyncName names what datasync does here.
const datasyncName = "fdatasync"

// datasync flushes f's data and the metadata needed to read it back
// (fdatasync), not its times.
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// preallocate reserves size bytes of f from its start (fallocate(2),
// growing the file), as a FileJournal reserves room for its lines.
func preallocate(f *os.File, size int64) error {
	return syscall.Fallocate(int(f.Fd()), 0, 0, size)
}
