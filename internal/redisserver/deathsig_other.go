//go:build !linux

package redisserver

import "os/exec"

// dieWithParent does nothing here: only Linux has Pdeathsig. The caller
// stops its servers with [Server.Stop].
func dieWithParent(*exec.Cmd) {}
