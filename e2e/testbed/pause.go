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

// Pause stops broker node i with SIGSTOP, its whole process group: its
// sockets stay open and nothing answers, like a hung JVM (a long GC pause,
// a frozen VM). Resume undoes it; a paused node still dies by Kill, Stop
// (after its grace) and the test bed's cleanup.
func (k *Kafka) Pause(i int) error {
	if i >= len(k.nodes) {
		return ErrNotControllable
	}
	return syscall.Kill(-k.nodes[i].proc.pid(), syscall.SIGSTOP)
}

// Resume continues node i after Pause (SIGCONT).
func (k *Kafka) Resume(i int) error {
	if i >= len(k.nodes) {
		return ErrNotControllable
	}
	return syscall.Kill(-k.nodes[i].proc.pid(), syscall.SIGCONT)
}
