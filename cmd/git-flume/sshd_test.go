package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// sshdPath is the distribution's OpenSSH server.
const sshdPath = "/usr/sbin/sshd"

func init() { scriptCmds["sshd"] = cmdSSHD }

// sshdAvailable is the [sshd] condition: under CI a machine without it
// fails the suite, naming what to install.
func sshdAvailable() (bool, error) {
	if _, err := os.Stat(sshdPath); err == nil {
		return true, nil
	}
	if os.Getenv("CI") != "" {
		return false, fmt.Errorf("CI: %s is missing; install openssh-server (apt-get install openssh-server; .ci/run installs it): the runner scripts start one on a loopback port", sshdPath)
	}
	return false, nil
}

// sshd ALIAS HOME HOST [NAME=VALUE...]: start an OpenSSH server on a free
// loopback port for the rest of the script, standing in for another
// machine: its sessions get HOME as their home, HOST as their flume host,
// the script's PATH and the NAME=VALUE given (FLUME_PANE=none unless
// given), and nothing else of the script's environment. sshd stop stops
// it, as a machine lost would. A client
// configuration names it ALIAS with a key made for it; its path is
// $SSH_CONFIG (ssh -F). Every connection accepted is logged to
// $WORK/.sshd/sshd.log ("Accepted publickey").
func cmdSSHD(ts *testscript.TestScript, neg bool, args []string) {
	dir := filepath.Join(ts.Getenv("WORK"), ".sshd")
	if len(args) == 1 && args[0] == "stop" && !neg {
		pid, err := os.ReadFile(filepath.Join(dir, "sshd.pid"))
		ts.Check(err)
		ts.Check(exec.Command("kill", strings.TrimSpace(string(pid))).Run())
		return
	}
	if neg || len(args) < 3 {
		ts.Fatalf("usage: sshd ALIAS HOME HOST [NAME=VALUE...] | sshd stop")
	}
	alias, home, host := args[0], args[1], args[2]
	ts.Check(os.MkdirAll(dir, 0o700))
	ts.Check(os.MkdirAll("/run/sshd", 0o755)) // sshd's privilege separation folder
	for _, key := range []string{"host_ed25519", "id_ed25519"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, key)).CombinedOutput(); err != nil {
			ts.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "id_ed25519.pub"))
	ts.Check(err)
	ts.Check(os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	me, err := osuser.Current()
	ts.Check(err)
	env := []string{"HOME=" + home, "PATH=" + ts.Getenv("PATH"), "FLUME_HOST=" + host, "FLUME_PANE=none",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + filepath.Join(home, ".gitconfig"),
		"GIT_AUTHOR_NAME=runner", "GIT_AUTHOR_EMAIL=runner@example.com", "GIT_COMMITTER_NAME=runner", "GIT_COMMITTER_EMAIL=runner@example.com",
		"LC_ALL=C", "TZ=UTC"}
	for _, kv := range args[3:] {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || strings.ContainsAny(kv, " \t\"") {
			ts.Fatalf("sshd: %q is not NAME=VALUE without spaces", kv)
		}
		env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, name+"=") })
		env = append(env, kv)
	}
	config := fmt.Sprintf("ListenAddress 127.0.0.1:%d\nHostKey %s\nAuthorizedKeysFile %s\nPidFile %s\nStrictModes no\nUsePAM no\n"+
		"PasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nLogLevel VERBOSE\nSetEnv %s\n",
		port, filepath.Join(dir, "host_ed25519"), filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"), strings.Join(env, " "))
	ts.Check(os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(config), 0o600))
	client := fmt.Sprintf("Host %s\n\tHostName 127.0.0.1\n\tPort %d\n\tUser %s\n\tIdentityFile %s\n\tIdentitiesOnly yes\n"+
		"\tStrictHostKeyChecking no\n\tUserKnownHostsFile /dev/null\n\tLogLevel ERROR\n",
		alias, port, me.Username, filepath.Join(dir, "id_ed25519"))
	ts.Check(os.WriteFile(filepath.Join(dir, "ssh_config"), []byte(client), 0o600))
	log, err := os.Create(filepath.Join(dir, "sshd.log"))
	ts.Check(err)
	cmd := exec.Command(sshdPath, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	cmd.Stdout, cmd.Stderr = log, log
	ts.Check(cmd.Start())
	ts.Defer(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(filepath.Join(dir, "sshd.log"))
			ts.Fatalf("sshd did not listen on %d: %s", port, data)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Setenv("SSH_CONFIG", filepath.Join(dir, "ssh_config"))
}
