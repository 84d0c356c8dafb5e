package controlplane

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Process is a program a test started: its output goes to a log file in
// the control plane's directory, and the test's cleanup stops it.
type Process struct {
	Name string
	Log  string
	// URL is the base URL of the process's HTTPS endpoint, where it has
	// one (kube-scheduler's, kube-controller-manager's).
	URL string
	// StopStatus, if not 0, is an exit status the process ends with when
	// stopped by SIGTERM (kube-scheduler's 1: "finished without leader
	// elect", "lost lease"), which Stop then takes as a clean stop.
	StopStatus int
	cmd        *exec.Cmd
	done       chan struct{}
	err        error // set when done is closed
}

// StartProcess starts bin with args, its output into dir/name.log, and
// registers its stop with t: SIGTERM, then SIGKILL if it has not exited
// within 20 s. Before it is stopped, every TCP socket it holds must be on
// loopback at both ends ([CheckLoopback]). If the test failed, the end of
// its log is written to the test's log.
func StartProcess(t testing.TB, dir, name, bin string, args ...string) *Process {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group: a Ctrl-C of the test does not reach it before
	// the test's cleanup does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("controlplane: start %s: %v", name, err)
	}
	p := &Process{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		if err := p.CheckLoopback(); err != nil {
			t.Error(err)
		}
		if err := p.Stop(20 * time.Second); err != nil {
			t.Errorf("controlplane: stop %s: %v", name, err)
		}
		if t.Failed() {
			t.Logf("controlplane: the end of %s's log:\n%s", name, p.Tail(40))
		}
	})
	return p
}

// Pid returns the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has exited, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM and waits for the process to exit, sending SIGKILL
// after grace. Stopping a stopped process does nothing. An exit by
// SIGTERM, or with status 0, is not an error; by SIGKILL it is.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.StopStatus != 0 && p.cmd.ProcessState.ExitCode() == p.StopStatus {
			return nil
		}
		return exitError(p.err)
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	return fmt.Errorf("%s did not exit within %v of SIGTERM and was killed", p.Name, grace)
}

// Kill stops the process at once with SIGKILL, as a node's crash does.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

func exitError(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return nil
		}
	}
	return err
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// CheckLoopback fails unless every TCP socket the running process holds,
// listening or connected, is on a loopback address at both ends (the
// remote end of a listener is the unspecified address): a check, from
// the kernel's own tables, that the process talks only to 127.0.0.0/8
// and ::1. A process that has exited holds none.
func (p *Process) CheckLoopback() error {
	if done, _ := p.Exited(); done {
		return nil
	}
	socks, err := Sockets(p.Pid())
	if err != nil {
		return err
	}
	for _, s := range socks {
		if !s.Local.IsLoopback() || (!s.Remote.IsLoopback() && !(s.Listening && s.Remote.IsUnspecified())) {
			return fmt.Errorf("controlplane: %s holds a socket off loopback: %s -> %s", p.Name, s.Local, s.Remote)
		}
	}
	return nil
}

// Socket is one TCP socket of a process, as /proc/net/tcp and tcp6 list
// it.
type Socket struct {
	Local, Remote net.IP
	Listening     bool
}

// Sockets returns the TCP sockets process pid holds.
func Sockets(pid int) ([]Socket, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	return SocketsOf(pid, inodes)
}

// SocketsOf returns the TCP sockets whose inodes are among inodes, from
// the socket tables of process pid's network namespace: one read of them
// for the sockets of many processes.
func SocketsOf(pid int, inodes map[string]bool) ([]Socket, error) {
	var out []Socket
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || !inodes[fields[9]] {
				continue
			}
			local, err1 := procAddr(fields[1])
			remote, err2 := procAddr(fields[2])
			if err := errors.Join(err1, err2); err != nil {
				f.Close()
				return nil, err
			}
			state, _ := strconv.ParseUint(fields[3], 16, 8)
			out = append(out, Socket{Local: local, Remote: remote, Listening: state == 0x0A})
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// procAddr decodes an address of /proc/net/tcp: the IP in hex, 32-bit
// words in host (little-endian) order, then ":port".
func procAddr(s string) (net.IP, error) {
	h, _, _ := strings.Cut(s, ":")
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return nil, fmt.Errorf("controlplane: address %q in /proc/net/tcp", s)
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	return net.IP(b), nil
}
