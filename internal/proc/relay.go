package proc

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// Relay runs path with args as this process's one child, made with attr
// (new namespaces, say) and this process's standard files, and ends this
// process as the child ended: its exit status, or the signal that killed
// it, so that whoever waits for this process (a pane's tmux) sees the
// child's end. Signals a terminal sends reach the child by its process
// group and are ignored here; those sent to this process alone are
// passed on. It returns only when the child could not start.
func Relay(path string, args []string, attr *syscall.SysProcAttr) error {
	cmd := exec.Command(path, args[1:]...)
	cmd.Args[0] = args[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = attr
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", path, err)
	}
	go func() {
		for sig := range sigs {
			_ = cmd.Process.Signal(sig) // the child may have ended meanwhile
		}
	}()
	_ = cmd.Wait() // how it ended is in its state
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		os.Exit(1)
	}
	if ws.Signaled() {
		signal.Reset(ws.Signal())
		_ = syscall.Kill(os.Getpid(), ws.Signal()) // ends this process as the child ended
		os.Exit(128 + int(ws.Signal()))
	}
	os.Exit(ws.ExitStatus())
	return nil
}
