package scheduler

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/lockstep-dev/lockstep/framework"
	extv1 "github.com/lockstep-dev/lockstep/sample/api/extender/v1"
	"github.com/lockstep-dev/lockstep/sample/internal/kube"
)

// The scheduler's configuration file is kube-scheduler's: a
// KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), decoded
// strictly as kube-scheduler decodes it. The sample honours its extenders
// list field by field; the other fields are accepted and named in a
// warning, since the sample scheduler has no profiles, plugins, leader
// election or API server client to configure.

// ConfigAPIVersion and ConfigKind are what a configuration file declares.
const (
	ConfigAPIVersion = "kubescheduler.config.k8s.io/v1"
	ConfigKind       = "KubeSchedulerConfiguration"
)

// LoadConfig reads a KubeSchedulerConfiguration file: strictly (an
// unknown, misspelt or duplicated field is an error), of the right
// apiVersion and kind, its extenders valid as kube-scheduler validates
// them. The warnings name what it sets that the sample does not
// implement.
func LoadConfig(path string) (*configv1.KubeSchedulerConfiguration, []string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	cfg, warnings, err := ParseConfig(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, warnings, nil
}

// ParseConfig is [LoadConfig] of a file's content.
func ParseConfig(doc []byte) (*configv1.KubeSchedulerConfiguration, []string, error) {
	var cfg configv1.KubeSchedulerConfiguration
	if err := kube.DecodeStrict(doc, &cfg); err != nil {
		return nil, nil, err
	}
	if cfg.APIVersion != ConfigAPIVersion || cfg.Kind != ConfigKind {
		return nil, nil, fmt.Errorf("apiVersion %q kind %q: want %s %s", cfg.APIVersion, cfg.Kind, ConfigAPIVersion, ConfigKind)
	}
	if err := validateExtenders(cfg.Extenders); err != nil {
		return nil, nil, err
	}
	// What else is set, by its members' names in the file.
	var top map[string]json.RawMessage
	if err := kube.DecodeStrict(doc, &top); err != nil {
		return nil, nil, err
	}
	var unimplemented []string
	for name := range top {
		if name != "apiVersion" && name != "kind" && name != "extenders" {
			unimplemented = append(unimplemented, name)
		}
	}
	slices.Sort(unimplemented)
	var warnings []string
	if len(unimplemented) > 0 {
		warnings = append(warnings, "accepted but not implemented by the sample scheduler: "+strings.Join(unimplemented, ", "))
	}
	for i, e := range cfg.Extenders {
		for _, r := range e.ManagedResources {
			if r.IgnoredByScheduler {
				warnings = append(warnings, fmt.Sprintf("extenders[%d].managedResources %s: ignoredByScheduler has no effect: the sample scheduler does not check resources itself", i, r.Name))
			}
		}
		if e.EnableHTTPS && (e.TLSConfig == nil || e.TLSConfig.CAFile == "" && len(e.TLSConfig.CAData) == 0) {
			warnings = append(warnings, fmt.Sprintf("extenders[%d] %s: enableHTTPS without a CA: the server's certificate is not verified, as kube-scheduler does", i, e.URLPrefix))
		}
	}
	return &cfg, warnings, nil
}

// validateExtenders checks what kube-scheduler's validation checks of the
// extenders list. A managed resource is an extended resource (a domain
// outside kubernetes.io), named by one extender only: kube-scheduler
// refuses the configuration otherwise, so the sample must not run it.
func validateExtenders(extenders []configv1.Extender) error {
	var errs []error
	binders := 0
	managed := map[string]bool{}
	for i, e := range extenders {
		at := fmt.Sprintf("extenders[%d]", i)
		if u, err := url.Parse(e.URLPrefix); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s.urlPrefix %q: not an http(s) URL", at, e.URLPrefix))
		}
		if e.PrioritizeVerb != "" && e.Weight <= 0 {
			errs = append(errs, fmt.Errorf("%s.weight: must have a positive weight applied to it", at))
		}
		if e.BindVerb != "" {
			binders++
		}
		if e.HTTPTimeout.Duration < 0 {
			errs = append(errs, fmt.Errorf("%s.httpTimeout: must not be negative", at))
		}
		for j, r := range e.ManagedResources {
			if msgs := validation.IsQualifiedName(r.Name); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s.managedResources[%d].name %q: %s", at, j, r.Name, strings.Join(msgs, "; ")))
			} else if !isExtendedResourceName(r.Name) {
				errs = append(errs, fmt.Errorf("%s.managedResources[%d].name %q: is an invalid extended resource name", at, j, r.Name))
			}
			if managed[r.Name] {
				errs = append(errs, fmt.Errorf("%s.managedResources[%d].name %q: duplicate extender managed resource name", at, j, r.Name))
			}
			managed[r.Name] = true
		}
	}
	if binders > 1 {
		errs = append(errs, fmt.Errorf("extenders: found %d extenders implementing bind, only one is allowed", binders))
	}
	return errors.Join(errs...)
}

// isExtendedResourceName is Kubernetes' v1helper.IsExtendedResourceName:
// a name with a domain other than kubernetes.io, not a requests. quota
// name, that is a qualified name once prefixed by requests.
func isExtendedResourceName(name string) bool {
	if !strings.Contains(name, "/") || strings.Contains(name, corev1.ResourceDefaultNamespacePrefix) ||
		strings.HasPrefix(name, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+name)) == 0
}

// ExtendersFromConfig returns the extenders a configuration declares, in
// order, each called as kube-scheduler calls it: pinned to extender 1.0.0
// (the Kubernetes protocol, without a handshake) at urlPrefix + "/" +
// verb, filtering only with a filterVerb, scoring only with a
// prioritizeVerb, binding only with a bindVerb, asked about preemption
// only with a preemptVerb, sent whole nodes unless
// nodeCacheCapable, each call bounded by httpTimeout (default 5s, as
// kube-scheduler's), with TLS as enableHTTPS and tlsConfig say. base is
// each client's configuration (component, release, logger).
func ExtendersFromConfig(cfg *configv1.KubeSchedulerConfiguration, base framework.ClientConfig) ([]ExtenderConfig, error) {
	var out []ExtenderConfig
	for i, e := range cfg.Extenders {
		ec := ExtenderConfig{
			Name:             fmt.Sprintf("extender-%d", i),
			PinnedURL:        strings.TrimRight(e.URLPrefix, "/"),
			PinnedVersion:    extv1.Contract.Version(),
			Paths:            map[string]string{},
			NoFilter:         e.FilterVerb == "",
			Bind:             e.BindVerb != "",
			Weight:           float64(e.Weight),
			Ignorable:        e.Ignorable,
			NodeCacheCapable: e.NodeCacheCapable,
			HTTPTimeout:      e.HTTPTimeout.Duration,
			Client:           base,
		}
		if ec.HTTPTimeout == 0 {
			ec.HTTPTimeout = DefaultExtenderTimeout
		}
		if e.PrioritizeVerb == "" {
			ec.Weight = 0
		}
		for method, verb := range map[string]string{extv1.MethodFilter: e.FilterVerb, extv1.MethodPrioritize: e.PrioritizeVerb,
			extv1.MethodBind: e.BindVerb, extv1.MethodProcessPreemption: e.PreemptVerb} {
			if verb != "" {
				ec.Paths[method] = verb
			}
		}
		ec.Preempt = e.PreemptVerb != ""
		for _, r := range e.ManagedResources {
			ec.ManagedResources = append(ec.ManagedResources, r.Name)
		}
		if e.EnableHTTPS || e.TLSConfig != nil {
			tc, err := tlsConfig(e)
			if err != nil {
				return nil, fmt.Errorf("extenders[%d].tlsConfig: %w", i, err)
			}
			ec.Client.TLSConfig = tc
			ec.Client.Transport = nil // built from the TLS configuration
		}
		out = append(out, ec)
	}
	return out, nil
}

// DefaultExtenderTimeout is kube-scheduler's bound of an extender call
// when httpTimeout is not set.
const DefaultExtenderTimeout = 5 * time.Second

// tlsConfig builds the client TLS configuration of an extender as
// kube-scheduler does: certificate and key, CA, server name; without a
// CA, enableHTTPS does not verify the server.
func tlsConfig(e configv1.Extender) (*tls.Config, error) {
	t := e.TLSConfig
	if t == nil {
		t = &configv1.ExtenderTLSConfig{}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.Insecure} //nolint:gosec // as configured
	read := func(file string, data []byte) ([]byte, error) {
		if len(data) > 0 || file == "" {
			return data, nil
		}
		return os.ReadFile(file)
	}
	certPEM, err := read(t.CertFile, t.CertData)
	if err != nil {
		return nil, err
	}
	keyPEM, err := read(t.KeyFile, t.KeyData)
	if err != nil {
		return nil, err
	}
	if len(certPEM) > 0 || len(keyPEM) > 0 {
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	caPEM, err := read(t.CAFile, t.CAData)
	if err != nil {
		return nil, err
	}
	if len(caPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("the CA holds no PEM certificate")
		}
		cfg.RootCAs = pool
	} else if e.EnableHTTPS {
		cfg.InsecureSkipVerify = true
	}
	return cfg, nil
}
