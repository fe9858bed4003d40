//go:build !linux

package testkit

import "os/exec"

// dieWithParent does nothing here: only Linux has Pdeathsig. The caller
// stops its servers with [RedisServer.Stop].
func dieWithParent(*exec.Cmd) {}
