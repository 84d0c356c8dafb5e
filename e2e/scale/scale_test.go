package scale

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/e2e/controlplane"
	"github.com/lockstep-dev/lockstep/sample/cmd/lockstep-scale/result"
)

var (
	nodesFlag   = flag.String("scale.nodes", "", "comma-separated node counts to run; empty: TestScale skips (make scale and make scale-quick set it)")
	pathsFlag   = flag.String("scale.paths", "lockstep,kubernetes", "the paths to run at each node count, in order")
	podsFlag    = flag.Int("scale.pods", 5, "pods per node")
	steadyFlag  = flag.Duration("scale.steady", 60*time.Second, "the steady window measured")
	killsFlag   = flag.Int("scale.kills", 3, "nodes killed (together) after the steady window")
	placeFlag   = flag.Duration("scale.place-for", 10*time.Minute, "the most time spent placing pods")
	binFlag     = flag.String("scale.bin", "", "the lockstep-scale binary (sample/cmd/lockstep-scale)")
	ttlFlag     = flag.Duration("scale.session-ttl", 3*time.Second, "lockstep path: the nodes' session TTL")
	outFlag     = flag.String("scale.results", "", "the results file (JSON) each run is added to; empty: none")
	docsFlag    = flag.String("scale.docs", "", "if set, the docs directory to write scale.md and scale/scale.svg into, from the results file")
	regFlag     = flag.Duration("scale.register-for", 10*time.Minute, "the most time waited for every node to be Ready")
	fracFlag    = flag.Float64("scale.ready-fraction", 1, "lockstep path: the share of the nodes that must be Ready at once before pods are placed")
	killRegFlag = flag.Bool("scale.kill-at-registration", false, "kill the victims once the nodes are registered, not as the steady window starts (make scale-quick: the Kubernetes path's notice of them then overlaps the placement and the window)")
	capFlag     = flag.Duration("scale.run-timeout", 40*time.Minute, "the most one run (one path at one node count) may take")
	graceFlag   = flag.Duration("scale.node-grace", time.Second, "lockstep path: how long a node's kubelet may hold no session before the node is Unknown")
	extraFlag   = flag.String("scale.args", "", "further lockstep-scale flags for every run, space-separated (recorded in each run's command)")
	kcmFlag     = flag.String("scale.kcm-args", "", "Kubernetes path: further kube-controller-manager flags, space-separated (make scale-quick: a shorter node monitor grace period; recorded in each run, since P10 compares against the node lifecycle controller's defaults)")
)

// TestScale runs each path at each node count of -scale.nodes, each on a
// control plane of its own, and adds each run's figures to the results
// file; a run that fails is recorded as failed (the largest N a path
// holds is the largest that did not), and the test goes on with the next.
func TestScale(t *testing.T) {
	if *nodesFlag == "" {
		if *docsFlag != "" && *outFlag != "" {
			writeDocs(t) // the report of the runs recorded, again
			return
		}
		t.Skip("no -scale.nodes: make scale and make scale-quick run this")
	}
	if *binFlag == "" {
		t.Fatal("-scale.bin: the lockstep-scale binary is needed")
	}
	for _, ns := range strings.Split(*nodesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(ns))
		if err != nil || n <= 0 {
			t.Fatalf("-scale.nodes: %q", ns)
		}
		for _, path := range strings.Split(*pathsFlag, ",") {
			t.Run(fmt.Sprintf("%s/%d", path, n), func(t *testing.T) { runOne(t, path, n) })
		}
	}
	if *docsFlag != "" && *outFlag != "" {
		writeDocs(t)
	}
}

// writeDocs writes scale.md and scale/scale.svg into -scale.docs from
// the results file.
func writeDocs(t *testing.T) {
	rs, err := LoadResults(*outFlag)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(*docsFlag, "scale"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteReport(rs, filepath.Join(*docsFlag, "scale.md"), filepath.Join(*docsFlag, "scale", "scale.svg"), "scale/scale.svg"); err != nil {
		t.Fatal(err)
	}
}

func runOne(t *testing.T, path string, nodes int) {
	p := controlplane.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), *capFlag)
	defer cancel()
	args := []string{"--path", path, "--nodes", strconv.Itoa(nodes), "--pods-per-node", strconv.Itoa(*podsFlag),
		"--steady", steadyFlag.String(), "--kills", strconv.Itoa(*killsFlag), "--place-for", placeFlag.String(),
		"--register-for", regFlag.String(), "--kill-at-registration=" + strconv.FormatBool(*killRegFlag),
		"--etcd-metrics", p.EtcdURL + "/metrics", "--admin-kubeconfig", p.Kubeconfig(t, "scale-admin", p.Admin)}
	// Kubernetes' node lifecycle controller runs on its own path only: on
	// lockstep's, no kubelet renews a Lease, and the node controller
	// writes the Ready condition. The ttl controller runs on neither: it
	// annotates every Node object with how long kubelets may cache
	// secrets, again each time the cluster's size crosses one of its
	// bounds, at its client's 20 writes per second, which at thousands of
	// nodes is minutes of writes unrelated to node liveness after every
	// registration.
	controllers, kcmArgs := "*,-ttl", []string(nil)
	switch path {
	case "lockstep":
		controllers = "*,-ttl,-nodelifecycle"
		args = append(args, "--kubeconfig", nodeControllerKubeconfig(t, p), "--session-ttl", ttlFlag.String(),
			"--node-grace", graceFlag.String(), "--ready-fraction", strconv.FormatFloat(*fracFlag, 'f', -1, 64))
	case "kubernetes":
		caCert, caKey := p.CAFiles(t)
		args = append(args, "--client-ca-cert", caCert, "--client-ca-key", caKey)
		kcmArgs = strings.Fields(*kcmFlag)
	default:
		t.Fatalf("-scale.paths: %q is not lockstep or kubernetes", path)
	}
	args = append(args, strings.Fields(*extraFlag)...)
	kcm := p.StartControllerManager(t, controllers, kcmArgs...)
	args = append(args, "--watch", fmt.Sprintf("kube-apiserver=%d,etcd=%d,kube-controller-manager=%d", p.APIServer.Pid(), p.Etcd.Pid(), kcm.Pid()))

	res := Result{Path: path, Nodes: nodes, PodsPerNode: *podsFlag, Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		Command: "lockstep-scale " + strings.Join(redact(args), " "), ControllerManagerArgs: strings.Join(kcmArgs, " ")}
	res.LoadStart = loadAvg()
	out, err := run(ctx, t, *binFlag, args)
	if err == nil {
		err = res.ReadRun(out)
	} else if len(out) > 0 {
		// It failed with its figures written (some hollow nodes' did not
		// reach it): they are kept beside why.
		_ = res.ReadRun(out)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == result.ExitStopped {
		res.Stopped = true
	}
	if err != nil {
		res.Failed, res.LoadEnd = oneLine(err.Error()), loadAvg()
		t.Errorf("%s path, %d nodes: %v", path, nodes, err)
	} else {
		t.Logf("%s path, %d nodes: %.1f etcd puts/s, %.1f node writes/s, cores %v, heartbeat p99 %.0f ms (steady %.1f ms), bind→Running p99 %.0f ms (steady %.0f ms), kills noticed %v ms, %d lapses and %d flaps in the window, load %s → %s (max %.1f)",
			path, nodes, res.EtcdPutsPerSec, res.NodeWritesPerSec, res.Cores, res.HeartbeatP99Ms, res.SteadyHeartbeatP99Ms, res.BindToRunningP99Ms,
			res.SteadyBindToRunningP99Ms, res.KillNoticedMs, res.SteadyLapses, res.SteadyFlaps, res.LoadStart, res.LoadEnd, res.LoadMax)
	}
	if *outFlag != "" {
		if err := SaveResult(*outFlag, res); err != nil {
			t.Error(err)
		}
	}
}

// nodeControllerKubeconfig is the node controller's identity: it may
// create, read and patch Node objects and their status, nothing else.
func nodeControllerKubeconfig(t *testing.T, p *controlplane.Plane) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const user = "lockstep-nodecontroller"
	rbac := p.Client.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes", "nodes/status"}, Verbs: []string{"create", "get", "patch"}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := p.Config(user)
	if err != nil {
		t.Fatal(err)
	}
	return p.Kubeconfig(t, user, cfg)
}

// run runs lockstep-scale with args, its progress on stderr, and returns
// its stdout (the JSON result, which a run that failed may have written
// too). While it runs, every TCP socket of it and
// of its children is checked to be on loopback at both ends, every 20 s.
func run(ctx context.Context, t *testing.T, bin string, args []string) ([]byte, error) {
	var stdout bytes.Buffer
	stderr := &lastLine{w: os.Stderr}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Every 20 s: with thousands of sockets, reading the kernel's tables
	// costs a measurable share of the machine.
	tick := time.NewTicker(20 * time.Second)
	defer tick.Stop()
	checked := 0
	for {
		select {
		case err := <-done:
			t.Logf("loopback checked %d times over lockstep-scale and its children", checked)
			if err != nil {
				return stdout.Bytes(), fmt.Errorf("lockstep-scale: %w: %s", err, stderr.last())
			}
			return stdout.Bytes(), nil
		case <-ctx.Done():
			// SIGTERM: it stops its children and exits; then SIGKILL.
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			return nil, fmt.Errorf("lockstep-scale did not finish within %v", *capFlag)
		case <-tick.C:
			socks, err := treeSockets(cmd.Process.Pid)
			if err != nil {
				continue // a process exited meanwhile
			}
			for _, s := range socks {
				if !s.Local.IsLoopback() || (!s.Remote.IsLoopback() && !(s.Listening && s.Remote.IsUnspecified())) {
					t.Errorf("lockstep-scale or a child of it holds a socket off loopback: %s -> %s", s.Local, s.Remote)
				}
			}
			checked++
		}
	}
}

// lastLine passes what is written to w and keeps the last line that
// starts with "lockstep-scale:", its error.
type lastLine struct {
	w    io.Writer
	mu   sync.Mutex
	line string
}

func (l *lastLine) Write(b []byte) (int, error) {
	l.mu.Lock()
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "lockstep-scale:") {
			l.line = line
		}
	}
	l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lastLine) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.line
}

// treeSockets returns the TCP sockets of pid and its descendants, reading
// the kernel's socket tables once for all of them (they share one network
// namespace): /proc/<pid>/fd for each process's socket inodes, then
// /proc/<pid>/net/tcp and tcp6.
func treeSockets(pid int) ([]controlplane.Socket, error) {
	inodes := map[string]bool{}
	for _, p := range tree(pid) {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p))
		if err != nil {
			continue // exited meanwhile
		}
		for _, fd := range fds {
			link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", p, fd.Name()))
			if err == nil && strings.HasPrefix(link, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
			}
		}
	}
	return controlplane.SocketsOf(pid, inodes)
}

// tree is pid and its descendants, from /proc/<pid>/task/*/children.
func tree(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", out[i]))
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			for _, c := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(c); err == nil {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// redact drops the run's temporary paths and ports from a command line
// kept in the report. Where the steady window's profiles went says
// nothing of the run: the record keeps only that they were written.
func redact(args []string) []string {
	const profiles = "--steady-cpu-profiles"
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		switch {
		case slices.Contains([]string{"--etcd-metrics", "--admin-kubeconfig", "--kubeconfig", "--client-ca-cert", "--client-ca-key", "--watch"}, args[i]):
			i++
		case args[i] == profiles:
			i++
			out = append(out, profiles+"=<dir>")
		case strings.HasPrefix(args[i], profiles+"="):
			out = append(out, profiles+"=<dir>")
		default:
			out = append(out, args[i])
		}
	}
	return out
}

// loadAvg is the machine's load average over 1, 5 and 15 minutes.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
