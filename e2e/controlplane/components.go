package controlplane

import (
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// StartScheduler starts a kube-scheduler build (bin: "kube-scheduler" or
// "lockstep-kube-scheduler") as the user system:kube-scheduler, whose
// permissions are Kubernetes' bootstrap RBAC for the scheduler, with a
// KubeSchedulerConfiguration of its client connection, no leader election
// and config (YAML members of the configuration, profiles and
// extenders), and returns once its /readyz answers.
func (p *Plane) StartScheduler(t testing.TB, bin, config string) *Process {
	t.Helper()
	cfg, err := p.Config("system:kube-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := p.Kubeconfig(t, bin, cfg)
	return p.StartSchedulerWith(t, bin, kubeconfig, fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: %q, qps: 200, burst: 400}
leaderElection: {leaderElect: false}
%s`, kubeconfig, config))
}

// StartSchedulerWith starts a kube-scheduler build with a whole
// KubeSchedulerConfiguration (which names its own client connection's
// kubeconfig), its endpoints authenticating and authorising through the
// apiserver as kubeconfig's identity, and returns once its /readyz
// answers.
func (p *Plane) StartSchedulerWith(t testing.TB, bin, kubeconfig, config string) *Process {
	t.Helper()
	path, err := Bin(bin)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(p.Dir, bin+".yaml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	port := FreePort(t)
	proc := StartProcess(t, p.Dir, bin, path, append([]string{"--config=" + file,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig, "--v=1"},
		p.serving(t, bin)...)...)
	proc.URL = fmt.Sprintf("https://127.0.0.1:%d", port)
	proc.StopStatus = 1 // kube-scheduler's exit after SIGTERM
	if err := Healthy(proc, proc.URL+"/readyz", 2*time.Minute, p.HTTPTLS()); err != nil {
		t.Fatal(err)
	}
	return proc
}

// StartControllerManager starts kube-controller-manager running
// controllers (its --controllers, e.g. "serviceaccount",
// "nodelifecycle") with a service account of its own for each
// (--use-service-account-credentials, as clusters run it), and returns
// once its /healthz answers.
func (p *Plane) StartControllerManager(t testing.TB, controllers string, extra ...string) *Process {
	t.Helper()
	path, err := Bin("kube-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := p.Config("system:kube-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := p.Kubeconfig(t, "kube-controller-manager", cfg)
	port := FreePort(t)
	args := append([]string{"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--leader-elect=false", "--controllers=" + controllers,
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + filepath.Join(p.Dir, "sa.key"),
		"--root-ca-file=" + filepath.Join(p.Dir, "ca.crt"),
		"--v=1"}, p.serving(t, "kube-controller-manager")...)
	proc := StartProcess(t, p.Dir, "kube-controller-manager", path, append(args, extra...)...)
	proc.URL = fmt.Sprintf("https://127.0.0.1:%d", port)
	if err := Healthy(proc, proc.URL+"/healthz", 2*time.Minute, p.HTTPTLS()); err != nil {
		t.Fatal(err)
	}
	return proc
}

// serving returns the flags of a component's serving certificate, issued
// by the plane's authority for 127.0.0.1, and of the authority its
// clients' certificates must chain to.
func (p *Plane) serving(t testing.TB, name string) []string {
	t.Helper()
	cert, key, err := p.ca.issue(pkix.Name{CommonName: name}, true)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(p.Dir, name+"-serving.crt"), filepath.Join(p.Dir, name+"-serving.key")
	if err := errors.Join(os.WriteFile(certFile, cert, 0o600), os.WriteFile(keyFile, key, 0o600)); err != nil {
		t.Fatal(err)
	}
	return []string{"--tls-cert-file=" + certFile, "--tls-private-key-file=" + keyFile,
		"--client-ca-file=" + filepath.Join(p.Dir, "ca.crt")}
}
