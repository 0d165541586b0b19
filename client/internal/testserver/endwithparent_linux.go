package testserver

import (
	"os/exec"
	"syscall"
)

// endWithParent has the kernel kill the server when the test binary ends
// without returning to Main (log.Fatal in an example, a panic, a test
// timeout, SIGKILL), so that no server outlives its tests.
func endWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
