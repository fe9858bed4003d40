//go:build !linux

package main

import "os/exec"

// dieWithParent does nothing here: only Linux has Pdeathsig. The harness
// stops its redis-server when it returns.
func dieWithParent(*exec.Cmd) {}
