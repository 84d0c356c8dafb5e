package suite

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lockstep-dev/lockstep/bench/internal/results"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchrun"
)

// The workloads that need a server in a process of its own (a killed
// server, the server's own CPU and memory) run this program again with
// -serve: the child serves on the address it is given, says "ready" on
// its standard output, answers one line per command on its standard input
// and exits when that closes.
//
//	mem       the live heap and stacks after a collection, as JSON
//	membase   the same as it was before the child opened its sessions
//	cpu       its user plus system CPU time so far, in nanoseconds
//	sessions  how many sessions it holds (lockstep)

// childMemory is what the mem command answers.
type childMemory struct {
	Heap, Stacks uint64
	Goroutines   int
}

// perItem is the bytes each of n items added from a to b.
func perItem(a, b childMemory, n int) float64 {
	return benchrun.PerItem(benchrun.Memory{Heap: a.Heap, Stacks: a.Stacks}, benchrun.Memory{Heap: b.Heap, Stacks: b.Stacks}, n)
}

// ServeChild is the child's side: it serves kind ("lockstep" or "grpc")
// on addr until in closes; or, for the client kinds, holds n idle lockstep
// sessions ("sessions") or n idle watchers ("watchers") of the lockstep
// server at addr. With tlsDir (the folder of a trust, lockstep server and
// sessions only) it speaks mutual TLS.
func ServeChild(kind, addr string, n int, tlsDir string, in io.Reader, out io.Writer) error {
	var sessions func() int
	var stop func() error
	var mtls *framework.Credentials
	if tlsDir != "" {
		if kind != "lockstep" && kind != "sessions" {
			return fmt.Errorf("-serve %s does not speak mutual TLS", kind)
		}
		base := trustClient
		if kind == "lockstep" {
			base = trustServer
		}
		var err error
		if mtls, err = childCredentials(tlsDir, base); err != nil {
			return err
		}
	}
	base := benchrun.LiveMemory()
	switch kind {
	case "sessions", "watchers":
		base = benchrun.LiveMemory()
		var h *holder
		var err error
		switch {
		case kind == "watchers":
			h, err = openWatchers("http://"+addr, n)
		case mtls != nil:
			h, err = openSessions("https://"+addr, n, mtls.Transport(""))
		default:
			h, err = openSessions("http://"+addr, n, nil)
		}
		if err != nil {
			return err
		}
		sessions = func() int { return n }
		stop = h.close
	case "lockstep":
		cfg := serverConfig()
		cfg.MTLS = mtls
		// One process holds the idle workload's 10,000 watchers, above the
		// default per-peer bound of 4,096 watch streams.
		cfg.Limits.WatchersPerPeer = 2 * results.MaxWatchers
		ls, err := startLockstep(addr, cfg, func(srv *framework.Server) {
			w := framework.ServeTopic[watchObject](srv, topicContract, topicName, framework.WithMaxWatchers(2*results.MaxWatchers), framework.WithMaxWatchersPerPeer(2*results.MaxWatchers))
			for k := range results.TopicKeys {
				if err := w.Set(watchObjectOf(k, time.Now())); err != nil {
					panic(err)
				}
			}
			idle := framework.ServeTopic[watchObject](srv, topicContract, idleTopic, framework.WithMaxWatchers(2*results.MaxWatchers), framework.WithMaxWatchersPerPeer(2*results.MaxWatchers))
			if err := idle.Set(watchObjectOf(0, time.Now())); err != nil {
				panic(err)
			}
		})
		if err != nil {
			return err
		}
		sessions = func() int { return len(ls.srv.Sessions()) }
		stop = func() error { return ls.stop(true) }
	case "grpc":
		g, err := startGRPC(addr)
		if err != nil {
			return err
		}
		sessions = func() int { return 0 }
		stop = g.stop
	default:
		return fmt.Errorf("no server kind %q", kind)
	}
	fmt.Fprintln(out, "ready")
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		switch sc.Text() {
		case "mem", "membase":
			m := benchrun.LiveMemory()
			if sc.Text() == "membase" {
				m = base
			}
			raw, _ := json.Marshal(childMemory{Heap: m.Heap, Stacks: m.Stacks, Goroutines: m.Goroutines})
			fmt.Fprintln(out, string(raw))
		case "cpu":
			fmt.Fprintln(out, int64(cpuSoFar()))
		case "sessions":
			fmt.Fprintln(out, sessions())
		default:
			fmt.Fprintln(out, "unknown command")
		}
	}
	return stop()
}

// cpuSoFar returns the user plus system CPU time this process has used.
func cpuSoFar() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// child is a server process started with -serve.
type child struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	addr string
}

// startChild runs self -serve kind -addr addr -n n and waits for it to be
// ready.
func startChild(self, kind, addr string, n int) (*child, error) {
	return startChildTLS(self, kind, addr, n, "")
}

// startChildTLS is startChild speaking mutual TLS with the trust in
// tlsDir (none when empty).
func startChildTLS(self, kind, addr string, n int, tlsDir string) (*child, error) {
	args := []string{"-serve", kind, "-addr", addr, "-n", fmt.Sprint(n)}
	if tlsDir != "" {
		args = append(args, "-tls", tlsDir)
	}
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewReader(outPipe), addr: addr}
	line, err := c.out.ReadString('\n')
	if err != nil || line != "ready\n" {
		c.kill()
		return nil, fmt.Errorf("the %s server process did not start: %q %v", kind, line, err)
	}
	return c, nil
}

// ask sends a command and returns its answer line.
func (c *child) ask(cmd string) (string, error) {
	if _, err := fmt.Fprintln(c.in, cmd); err != nil {
		return "", err
	}
	line, err := c.out.ReadString('\n')
	return strings.TrimSpace(line), err
}

// memory asks for "mem" or "membase".
func (c *child) memory(cmd string) (childMemory, error) {
	line, err := c.ask(cmd)
	if err != nil {
		return childMemory{}, err
	}
	var m childMemory
	err = json.Unmarshal([]byte(line), &m)
	return m, err
}

func (c *child) cpu() (time.Duration, error) {
	line, err := c.ask("cpu")
	if err != nil {
		return 0, err
	}
	var ns int64
	_, err = fmt.Sscan(line, &ns)
	return time.Duration(ns), err
}

// kill ends the child at once, as a crash would (SIGKILL), and reaps it.
func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	_ = c.cmd.Wait()
}

// close asks the child to stop and waits for it.
func (c *child) close() error {
	_ = c.in.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		c.kill()
		return errors.New("the server process did not exit within 10s of its input closing")
	}
}
