package framework_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// BenchmarkHeartbeats10k holds 10,000 sessions (one per simulated node, one
// client process sharing one transport and one heartbeat sender) at a 1s
// heartbeat against a nodecontroller in its own process, and measures that
// process's CPU for 10s (target P3: at most 0.25 core; and at least 10×
// less CPU per heartbeat than a durable etcd Put, 247µs in BENCHMARKS.md).
func BenchmarkHeartbeats10k(b *testing.B) {
	const sessions, window = 10000, 10 * time.Second
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), serverChildEnv+"="+addr)
	out, err := child.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		b.Fatalf("server child: %q %v", line, err)
	}

	c := benchContract(b, "1.0.0")
	tr := framework.NewTransport(nil)
	b.Cleanup(tr.CloseIdleConnections)
	beats := framework.NewHeartbeats(frameworktest.Quiet(), nil)
	clients := make([]*framework.Client, sessions)
	for i := range clients {
		clients[i] = frameworktest.NewClient(b, c, framework.ClientConfig{Component: "kubelet", Release: "1.31.0",
			Instance: fmt.Sprintf("node-%05d", i), Endpoints: []string{"http://" + addr}, Transport: tr, Heartbeats: beats})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, cl := range clients {
		if err := cl.WaitReady(ctx); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // handshakes done; let the heartbeat settle
	b.ResetTimer()
	before := childCPU(b, child.Process.Pid)
	start := time.Now()
	time.Sleep(window) // real time: the CPU an idle process spends over a wall-clock window is what is measured
	used := childCPU(b, child.Process.Pid) - before
	wall := time.Since(start)
	b.StopTimer()
	if err := checkSessions(addr, sessions); err != nil {
		b.Fatal(err)
	}
	beatsSent := float64(sessions) * wall.Seconds() // one renewal per session per second
	b.ReportMetric(used.Seconds()/wall.Seconds(), "server-cores")
	b.ReportMetric(float64(used.Nanoseconds())/1e3/beatsSent, "server-cpu-us/beat")
	b.ReportMetric(247/(float64(used.Nanoseconds())/1e3/beatsSent), "x-cheaper-than-etcd-put")
}

// childCPU reads another process's user+system CPU time from /proc.
func childCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	// Fields after the command name (which may hold spaces) start after ')'.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks
}

// checkSessions asks the server's status how many sessions it holds.
func checkSessions(addr string, want int) error {
	resp, err := http.Get("http://" + addr + protocol.PathStatus)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var st framework.ServerStatus
	if err := jsonDecode(resp, &st); err != nil {
		return err
	}
	if got := len(st.Sessions); got != want {
		return fmt.Errorf("server holds %d sessions, want %d", got, want)
	}
	return nil
}

func jsonDecode(resp *http.Response, v any) error {
	return json.NewDecoder(resp.Body).Decode(v)
}
