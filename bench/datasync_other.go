//go:build !linux

package main

import "os"

// datasyncName names what datasync does here.
const datasyncName = "fsync (no fdatasync here)"

// datasync is f.Sync where there is no fdatasync.
func datasync(f *os.File) error { return f.Sync() }
