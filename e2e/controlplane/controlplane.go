// Package controlplane runs a real Kubernetes control plane for tests:
// etcd and kube-apiserver, and on demand kube-controller-manager and
// kube-scheduler builds, as processes on 127.0.0.1, from the binaries
// make e2e builds into its cache (e2e/build.sh). The apiserver serves
// TLS with a certificate of the plane's own authority, authenticates
// clients by certificates of that authority (a certificate's common name
// is the user, its organisations the groups), signs service account
// tokens with a key pair of its own, and authorises with RBAC and the Node
// authoriser. Everything a plane starts stops, and its directory (etcd's
// data, certificates, logs) is removed, when its test ends.
package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// BinDirEnv names the directory of the binaries (e2e/build.sh's output).
const BinDirEnv = "LOCKSTEP_KUBE_BIN"

// Bin returns the path of a binary make e2e built: kube-apiserver,
// kube-controller-manager, kube-scheduler, etcd or lockstep-kube-scheduler.
func Bin(name string) (string, error) {
	dir := os.Getenv(BinDirEnv)
	if dir == "" {
		return "", fmt.Errorf("controlplane: %s is not set: run the e2e tests with make e2e, which builds the binaries and sets it", BinDirEnv)
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("controlplane: %w (make e2e builds it)", err)
	}
	return path, nil
}

// Version returns the first line of `name --version`.
func Version(name string) (string, error) {
	bin, err := Bin(name)
	if err != nil {
		return "", err
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("controlplane: %s --version: %v: %s", name, err, out)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line, nil
}

// Plane is a running etcd and kube-apiserver.
type Plane struct {
	// Dir holds etcd's data, the certificates and keys, kubeconfigs and
	// logs; it is removed when the test ends.
	Dir string
	// URL is the apiserver's https://127.0.0.1:PORT.
	URL string
	// Admin is a client configuration of a member of system:masters.
	Admin *rest.Config
	// Client is a clientset of Admin.
	Client kubernetes.Interface
	// APIServer and Etcd are the processes.
	APIServer, Etcd *Process
	// EtcdURL is etcd's client URL, http://127.0.0.1:PORT (its /metrics
	// too).
	EtcdURL string

	ca *authority
}

// Start starts etcd and kube-apiserver and returns once the apiserver's
// /readyz answers ok. Startup is bounded by 2 minutes.
func Start(t testing.TB) *Plane {
	t.Helper()
	apiserver, err := Bin("kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := Bin("etcd")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "lockstep-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs last: after every process of the plane
	// (and of the test) has stopped.
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("controlplane: remove %s: %v", dir, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("controlplane: %s is still there after the test: %v", dir, err)
		}
	})
	p := &Plane{Dir: dir}
	if p.ca, err = newAuthority(); err != nil {
		t.Fatal(err)
	}

	etcdPort, peerPort := FreePort(t), FreePort(t)
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	p.EtcdURL = etcdURL
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	p.Etcd = StartProcess(t, dir, "etcd", etcd,
		"--name=e2e", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=e2e="+peerURL, "--log-level=warn",
		// The tests' writes need not survive a power cut.
		"--unsafe-no-fsync")

	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	servingCert, servingKey, err := p.ca.issue(pkix.Name{CommonName: "kube-apiserver"}, true)
	if err != nil {
		t.Fatal(err)
	}
	saKey, saPub, err := serviceAccountKeys()
	if err != nil {
		t.Fatal(err)
	}
	port := FreePort(t)
	p.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	p.APIServer = StartProcess(t, dir, "kube-apiserver", apiserver,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		// Kubernetes' own Service's endpoints would name the advertised
		// address; on loopback, nothing may reconcile them.
		"--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
		"--cert-dir="+filepath.Join(dir, "apiserver-certs"),
		"--tls-cert-file="+write("apiserver.crt", servingCert), "--tls-private-key-file="+write("apiserver.key", servingKey),
		"--client-ca-file="+write("ca.crt", p.ca.certPEM),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+write("sa.pub", saPub), "--service-account-signing-key-file="+write("sa.key", saKey),
		"--service-cluster-ip-range=10.96.0.0/24",
		"--authorization-mode=Node,RBAC",
		"--profiling=false", "--v=1")

	if p.Admin, err = p.Config("e2e-admin", "system:masters"); err != nil {
		t.Fatal(err)
	}
	if p.Client, err = kubernetes.NewForConfig(p.Admin); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.waitReady(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("controlplane: kube-apiserver ready at %s in %v", p.URL, time.Since(start).Round(time.Millisecond))
	return p
}

// waitReady polls /readyz until it answers ok, a process of the plane
// exits, or timeout passes.
func (p *Plane) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last string
	for {
		body, err := p.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		last = fmt.Sprint(err)
		for _, proc := range []*Process{p.Etcd, p.APIServer} {
			if done, err := proc.Exited(); done {
				return fmt.Errorf("controlplane: %s exited (%v) before the apiserver was ready:\n%s", proc.Name, err, proc.Tail(30))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("controlplane: the apiserver is not ready after %v: %s", timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Config returns a client configuration that authenticates as user, a
// member of groups, by a client certificate of the plane's authority.
func (p *Plane) Config(user string, groups ...string) (*rest.Config, error) {
	cert, key, err := p.ca.issue(pkix.Name{CommonName: user, Organization: groups}, false)
	if err != nil {
		return nil, err
	}
	return &rest.Config{Host: p.URL, QPS: 500, Burst: 1000,
		TLSClientConfig: rest.TLSClientConfig{CAData: p.ca.certPEM, CertData: cert, KeyData: key}}, nil
}

// Kubeconfig writes a kubeconfig file for cfg into the plane's directory
// and returns its path, for the processes a test starts.
func (p *Plane) Kubeconfig(t testing.TB, name string, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		Impersonate: cfg.Impersonate.UserName, ImpersonateGroups: cfg.Impersonate.Groups}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: name}
	kc.CurrentContext = "e2e"
	path := filepath.Join(p.Dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// CAFiles writes the plane's authority's certificate and key into the
// plane's directory and returns their paths, for a program of the test's
// that issues client certificates of its own (a kubelet's for each of
// thousands of simulated nodes, say) which the apiserver then trusts.
func (p *Plane) CAFiles(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	keyDER, err := x509.MarshalECPrivateKey(p.ca.key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(p.Dir, "client-ca.crt"), filepath.Join(p.Dir, "client-ca.key")
	if err := errors.Join(os.WriteFile(certFile, p.ca.certPEM, 0o600),
		os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TLSConfig returns a client TLS configuration that trusts the plane's
// authority and presents a certificate for user, as a lockstep client or
// server of the test's own may use.
func (p *Plane) TLSConfig(user string) (*tls.Config, error) {
	certPEM, keyPEM, err := p.ca.issue(pkix.Name{CommonName: user}, false)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.cert)
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// CreateNamespace creates a namespace and its default ServiceAccount
// (nothing runs the controller that would), so that pods may be created
// in it.
func (p *Plane) CreateNamespace(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := p.Client.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// FreePort returns a TCP port free on 127.0.0.1 now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// HTTPTLS returns the TLS configuration of an admin's HTTPS client of
// the plane's components (their /metrics): it trusts the plane's
// authority and presents the admin's certificate.
func (p *Plane) HTTPTLS() *tls.Config {
	cert, err := tls.X509KeyPair(p.Admin.CertData, p.Admin.KeyData)
	if err != nil {
		panic("controlplane: the admin's own certificate: " + err.Error())
	}
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.cert)
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// Healthy polls url (a process's /healthz or /readyz, over https with
// tlsCfg) until it answers 200, the process exits, or timeout passes.
func Healthy(proc *Process, url string, timeout time.Duration, tlsCfg *tls.Config) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		if done, err := proc.Exited(); done {
			return fmt.Errorf("controlplane: %s exited (%v):\n%s", proc.Name, err, proc.Tail(30))
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("controlplane: %s at %s not healthy after %v: %s", proc.Name, url, timeout, last)
}
