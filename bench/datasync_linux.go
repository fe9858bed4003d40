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
