//go:build !linux

package main

import "os"

// datasyncName names what datasync does here.
const datasyncName = "fsync (no fdatasync here)"

// datasync is f.Sync where there is no fdatasync.
func datasync(f *os.File) error { return f.Sync() }

// preallocate does nothing where there is no fallocate: the lines are
// plain appends.
func preallocate(*os.File, int64) error { return nil }
