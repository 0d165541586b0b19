package testserver

import (
	"os/exec"
	"syscall"
)

// endWithParent has the kernel kill the server when the test binary dies,
// even by SIGKILL (a test timeout), so that no server outlives its tests.
func endWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
