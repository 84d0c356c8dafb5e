package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	contractfile "github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/handshake"
)

// The nodeinfo contract's messages, as generated code would declare them.
type (
	info struct {
		Node   string `json:"node"`
		Kernel string `json:"kernel,omitempty"`
	}
	ack struct {
		Accepted bool `json:"accepted"`
	}
	assignment struct {
		UID  string `json:"uid"`
		Node string `json:"node"`
	}
)

const nodeinfoFile = "testdata/nodeinfo/contract.yaml"

// nodeinfoServer serves testdata/nodeinfo/contract.yaml as the code
// generated from it would: its wire model is the generator's.
func nodeinfoServer(t *testing.T) (*frameworktest.Running, *framework.TopicWriter[assignment], *framework.Contract) {
	t.Helper()
	return nodeinfoServerWith(t, framework.ServerConfig{})
}

// nodeinfoServerWith is nodeinfoServer with a configuration of the test's
// (mutual TLS, say).
func nodeinfoServerWith(t *testing.T, cfg framework.ServerConfig) (*frameworktest.Running, *framework.TopicWriter[assignment], *framework.Contract) {
	t.Helper()
	cfg.Component, cfg.Release = "controller", "1.0.0"
	cf, err := contractfile.LoadFile(nodeinfoFile)
	require.NoError(t, err)
	c, err := framework.NewContract(cf.Handshake())
	require.NoError(t, err)
	var topic *framework.TopicWriter[assignment]
	srv := frameworktest.StartServer(t, cfg, func(s *framework.Server) {
		framework.HandleUnary(s, c, "Report", func(context.Context, *info) (*ack, error) { return &ack{Accepted: true}, nil })
		topic = framework.ServeTopic[assignment](s, c, "Assignment")
	})
	return srv, topic, c
}

// copyContract copies testdata/nodeinfo to a folder of the test's, with
// edit applied to the contract file's and the schema file's text.
func copyContract(t *testing.T, edit func(contract, schema string) (string, string)) string {
	t.Helper()
	dir := t.TempDir()
	c, err := os.ReadFile(nodeinfoFile)
	require.NoError(t, err)
	s, err := os.ReadFile("testdata/nodeinfo/schemas/nodeinfo.yaml")
	require.NoError(t, err)
	cs, ss := edit(string(c), string(s))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "schemas"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "contract.yaml"), []byte(cs), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "schemas", "nodeinfo.yaml"), []byte(ss), 0o600))
	return filepath.Join(dir, "contract.yaml")
}

func TestCheckContractFile(t *testing.T) {
	srv, _, c := nodeinfoServer(t)

	// The contract file itself: contract, version, client and fingerprint
	// all come from it.
	code, out, errOut := ctl(t, "check", srv.URL, "--contract-file", nodeinfoFile)
	require.Equal(t, 0, code, out+errOut)
	assert.Equal(t, "accepted: controller 1.0.0 (instance "+srv.Server.Instance()+") would agree on nodeinfo 1.0.0 with a agent offering "+c.Fingerprint()+"\n", out)

	// Prose is not part of the wire: a changed description is accepted.
	file := copyContract(t, func(c, s string) (string, string) {
		return strings.Replace(c, "Node facts from", "Facts about", 1), strings.Replace(s, "The kernel's release.", "uname -r", 1)
	})
	code, out, errOut = ctl(t, "check", srv.URL, "--contract-file", file)
	require.Equal(t, 0, code, out+errOut)

	// The same, as JSON: contract.json beside the same schema file.
	var doc any
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &doc))
	b, err = json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.Remove(file))
	jsonFile := filepath.Join(filepath.Dir(file), "contract.json")
	require.NoError(t, os.WriteFile(jsonFile, b, 0o600))
	code, out, errOut = ctl(t, "check", srv.URL, "--contract-file", jsonFile)
	require.Equal(t, 0, code, out+errOut)

	// A message changed under the same version.
	file = copyContract(t, func(c, s string) (string, string) {
		return c, strings.Replace(s, "kernel: {type: string", "kernel: {type: integer", 1)
	})
	code, out, errOut = ctl(t, "check", srv.URL, "--contract-file", file)
	require.Equal(t, exitRefused, code, out+errOut)
	assert.True(t, strings.HasPrefix(out, "refused (fingerprint_mismatch): "), out)

	// A new version the server does not speak.
	file = copyContract(t, func(c, s string) (string, string) { return strings.Replace(c, `"1.0.0"`, `"2.0.0"`, 1), s })
	code, out, errOut = ctl(t, "check", srv.URL, "--contract-file", file)
	require.Equal(t, exitRefused, code, out+errOut)
	assert.Equal(t, "refused (version_mismatch): controller speaks nodeinfo 1.0.0; agent offers 2.0.0: upgrade controller or run agent with fork mode\n", out)
	code, _, errOut = ctl(t, "check", srv.URL, "--contract-file", file, "--version", "1.0.0")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "is nodeinfo 2.0.0, not nodeinfo 1.0.0")

	// A contract file the generator refuses: its error, naming the file.
	file = copyContract(t, func(c, s string) (string, string) {
		return strings.Replace(c, "request: Info", "request: Nothing", 1), s
	})
	code, _, errOut = ctl(t, "check", srv.URL, "--contract-file", file)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "contract.yaml")
	assert.Contains(t, errOut, "Nothing")
}

// TestContractFileFingerprintIsTheGenerated reads the sample's nodestatus
// 2.0.0 contract file, as the user did, and finds the fingerprint
// its generated code was released with (sample/api/fingerprints.txt).
func TestContractFileFingerprintIsTheGenerated(t *testing.T) {
	const sampleAPI = "../../../sample/api"
	m, err := readContractFile(filepath.Join(sampleAPI, "nodestatus", "v2", "contract.yaml"))
	require.NoError(t, err)
	fp, err := handshakeFingerprint(m)
	require.NoError(t, err)
	ledger, err := os.ReadFile(filepath.Join(sampleAPI, "fingerprints.txt"))
	require.NoError(t, err)
	var want string
	sc := bufio.NewScanner(bytes.NewReader(ledger))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "nodestatus" && f[1] == "2.0.0" {
			want = f[2]
		}
	}
	require.NotEmpty(t, want, "the ledger names nodestatus 2.0.0")
	assert.Equal(t, want, fp)
}

func TestWatchSelect(t *testing.T) {
	srv, topic, _ := nodeinfoServer(t)
	require.NoError(t, topic.Set(&assignment{UID: "a", Node: "node-1"}))
	require.NoError(t, topic.Set(&assignment{UID: "b", Node: "node-2"}))

	lines := &lineBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"watch", srv.URL, "Assignment", "--select", "node=node-1"}, lines, &stderr)
	}()
	lines.waitFor(t, "synced (held by instance "+srv.Server.Instance()+")")
	assert.Contains(t, lines.String(), "# watching nodeinfo 1.0.0 Assignment where node=node-1 at "+srv.URL)
	assert.Contains(t, lines.String(), `set a {"uid":"a","node":"node-1"}`)
	require.NoError(t, topic.Set(&assignment{UID: "c", Node: "node-1"}))
	lines.waitFor(t, `set c {"uid":"c","node":"node-1"}`)
	require.NoError(t, topic.Set(&assignment{UID: "a", Node: "node-2"})) // a leaves the selection
	lines.waitFor(t, "delete a")
	cancel()
	require.Equal(t, 0, <-done, stderr.String())
	assert.NotContains(t, lines.String(), `"uid":"b"`, "node-2's objects are never sent")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--select", "kernel=5"}, "--select kernel: Assignment selects on node only"},
		{[]string{"--select", "node"}, `want FIELD=VALUE`},
		{[]string{"--select", "node=a", "--select", "node=b"}, "node is selected twice"},
		{[]string{"--select", "since=x"}, "resume point"},
	} {
		code, _, errOut := ctl(t, append([]string{"watch", srv.URL, "Assignment"}, tc.args...)...)
		assert.Equal(t, 2, code, tc.args)
		assert.Contains(t, errOut, tc.want, tc.args)
	}
	require.Eventually(t, func() bool { return len(srv.Server.Sessions()) == 0 }, 10*time.Second, 5*time.Millisecond,
		"no session left open")
}

func handshakeFingerprint(m handshake.Contract) (string, error) { return handshake.Fingerprint(&m) }
