package proc_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/proc"
)

// helperEnv makes this test binary, started by a test, the process the
// test looks at instead of running tests.
const helperEnv = "FLUME_PROC_TEST_HELPER"

func init() {
	if os.Getenv(helperEnv) == "first-thread-exits" {
		runtime.LockOSThread() // TestMain runs on the process's first thread
	}
}

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "first-thread-exits" {
		// The first thread alone exits (exit, not exit_group); the
		// runtime's other threads go on, and the process with them.
		fmt.Println("ready")
		syscall.RawSyscall(syscall.SYS_EXIT, 0, 0, 0)
	}
	os.Exit(m.Run())
}

// TestAProcessWhoseFirstThreadEndedStillRuns_A10: a process whose first
// thread is a zombie while another of its threads runs has not ended. The
// kernel shows a process that way while one of its threads executes a new
// program (found under load: an agent's launcher, which executes the
// agent, read for a moment as ended with status 0, and its run was
// recorded as never started); a process whose first thread exited on its
// own is the case a test can hold still.
func TestAProcessWhoseFirstThreadEndedStillRuns_A10(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"=first-thread-exits")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("helper said %q", line)
	}
	deadline := time.Now().Add(10 * time.Second)
	for state(t, pid) != 'Z' {
		if time.Now().After(deadline) {
			t.Fatalf("the helper's first thread did not end: state %c", state(t, pid))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !proc.Alive(pid) {
		t.Error("Alive: a process with a running thread reads as ended")
	}
	if _, ok := proc.Started(pid); !ok {
		t.Error("Started: a process with a running thread reads as ended")
	}
	if status, signal, ok := proc.Exited(pid); ok {
		t.Errorf("Exited: a process with a running thread reads as ended with status %d, signal %d", status, signal)
	}

	// Killed, every thread ends: now it has.
	cmd.Process.Signal(syscall.SIGKILL)
	for proc.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatal("a killed process still reads as alive")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, _, ok := proc.Exited(pid); !ok {
		t.Error("Exited: a killed process, not yet reaped, reads as running")
	}
}

// state is process pid's first thread's state letter.
func state(t *testing.T, pid int) byte {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndexByte(data, ')')
	return data[i+2]
}
