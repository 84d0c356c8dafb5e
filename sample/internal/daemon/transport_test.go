package daemon

import (
	"flag"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
)

// TestClientsOfAProcessShareTransports: every client configuration of a
// runtime carries the process's one transport per server name, with mutual
// TLS and without, so its clients share connections and TLS sessions
// rather than each dialling and handshaking on its own.
func TestClientsOfAProcessShareTransports(t *testing.T) {
	dir := t.TempDir()
	writeCerts(t, dir, "scheduler")
	p := func(name string) string { return filepath.Join(dir, name) }
	for name, args := range map[string][]string{
		"mutual TLS": {"--tls-cert", p("scheduler.crt"), "--tls-key", p("scheduler.key"), "--tls-ca", p("ca.crt")},
		"TLS":        {"--tls-cert", p("scheduler.crt"), "--tls-key", p("scheduler.key")},
		"plain":      nil,
	} {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			f := NewFlags(fs, "scheduler", "127.0.0.1:0", false)
			require.NoError(t, fs.Parse(args))
			rt, err := NewRuntime(f, io.Discard)
			require.NoError(t, err)
			var cfgs []framework.ClientConfig
			for _, spec := range []string{"https://127.0.0.1:8441", "https://127.0.0.1:8441", "https://127.0.0.1:8443", ""} {
				cfg, err := rt.ClientConfig(spec, framework.ClientConfig{})
				require.NoError(t, err)
				cfgs = append(cfgs, cfg)
			}
			require.NotNil(t, cfgs[0].Transport)
			for i, cfg := range cfgs {
				assert.Same(t, cfgs[0].Transport, cfg.Transport, "configuration %d", i)
				assert.Nil(t, cfg.TLSConfig, "the transport carries the TLS configuration")
			}
		})
	}
}
