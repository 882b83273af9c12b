package testbed

import "syscall"

// Pause stops mariadbd with SIGSTOP: its connections stay open and it
// answers nothing, like a hung or frozen server (the kernel still accepts
// new TCP connections; no handshake follows). Resume undoes it; a paused
// server still dies by Kill and by the test bed's cleanup.
func (m *MySQL) Pause() error {
	if !m.Private() {
		return ErrNotControllable
	}
	return m.proc.cmd.Process.Signal(syscall.SIGSTOP)
}

// Resume continues a server stopped by Pause (SIGCONT).
func (m *MySQL) Resume() error {
	if !m.Private() {
		return ErrNotControllable
	}
	return m.proc.cmd.Process.Signal(syscall.SIGCONT)
}
