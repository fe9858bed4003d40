package testkit

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel SIGKILL cmd when this process dies, so that
// no redis-server outlives it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
