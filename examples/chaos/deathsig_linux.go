package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel SIGKILL cmd when the harness dies, so that
// no redis-server of its own outlives it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
