package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	contractfile "github.com/lockstep-dev/lockstep/codegen/contract"
	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// checkArgs are check's flags: what the client would offer, and as whom.
type checkArgs struct {
	conn                                                 connFlags
	contract, ver, fingerprint, file, component, release string
}

func runCheck(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var c checkArgs
	c.conn.register(fs)
	fs.StringVar(&c.contract, "contract", "", "the contract (required, unless --contract-file names it)")
	fs.StringVar(&c.ver, "version", "", "the contract version the client would offer (required, unless --contract-file names it)")
	fs.StringVar(&c.fingerprint, "fingerprint", "", "the fingerprint the client would offer (default: the server's for that version, so only the version is checked)")
	fs.StringVar(&c.file, "contract-file", "", "the contract file the client is built from (contract.yaml or contract.json, with the schema files it refers to; or a contract's JSON wire model): its contract, version, client and fingerprint are offered")
	fs.StringVar(&c.component, "component", "", "the client component to ask as (default: the contract's client, from --contract-file or the server's status)")
	fs.StringVar(&c.release, "release", "", "the client release to ask as (checked against the server's release constraint)")
	pos, err := parse(fs, args, "URL")
	if err != nil {
		return err
	}
	if c.fingerprint != "" && c.file != "" {
		return usageError("give --fingerprint or --contract-file, not both")
	}
	if err := c.fromFile(); err != nil {
		return err
	}
	if c.contract == "" || c.ver == "" {
		return usageError("check needs --contract and --version, or --contract-file")
	}
	srv, err := c.conn.connect(pos[0])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.conn.timeout)
	defer cancel()
	if c.fingerprint == "" || c.component == "" {
		if err := c.fromStatus(ctx, srv, stdout); err != nil {
			return err
		}
	}
	hello := handshake.Hello{Contract: c.contract, Component: c.component, Instance: "lockstepctl-check",
		Release: c.release, Offers: []handshake.Offer{{Version: c.ver, Fingerprint: c.fingerprint}}}
	// Under mutual TLS with a certificate of another component (an
	// operator's), the dry run is asked on behalf of the client component:
	// see admit.Gate.OnBehalfOf (framework/internal/admit).
	var header http.Header
	behalf := c.conn.identity != nil && c.conn.identity.Component != c.component
	if behalf {
		header = http.Header{headerOnBehalfOf: {c.component}}
	}
	a, err := srv.do(ctx, http.MethodPost, protocol.PathHandshake+"?"+protocol.QueryDryRun+"=1", header, hello)
	if err != nil {
		return err
	}
	if behalf && a.status == http.StatusForbidden {
		// The claim refused: the server does not (yet) accept a dry run on
		// behalf of a role from this identity. That says nothing of
		// whether a real client would be accepted: not a refusal.
		return fmt.Errorf("%s: the server does not accept a dry run on behalf of %s from %s (a server that predates it, or an identity it does not take for an operator); ask with a %s certificate instead",
			errorOf(a, "handshake"), c.component, c.conn.identity, c.component)
	}
	return c.report(stdout, a)
}

// fromFile fills what --contract-file says and the flags left open: the
// contract, its version, its client; and the fingerprint.
func (c *checkArgs) fromFile() error {
	if c.file == "" {
		return nil
	}
	m, err := readContractFile(c.file)
	if err != nil {
		return err
	}
	if c.contract == "" {
		c.contract = m.Name
	}
	if c.ver == "" {
		c.ver = m.Version
	}
	if m.Name != c.contract || m.Version != c.ver {
		return fmt.Errorf("--contract-file %s is %s %s, not %s %s", c.file, m.Name, m.Version, c.contract, c.ver)
	}
	if c.component == "" {
		c.component = m.Client
	}
	if c.fingerprint, err = handshake.Fingerprint(&m); err != nil {
		return fmt.Errorf("--contract-file %s: %w", c.file, err)
	}
	return nil
}

// fromStatus fills the client component and the fingerprint the flags
// left open from the server's status; a version the server does not serve
// is reported as a refusal.
func (c *checkArgs) fromStatus(ctx context.Context, srv server, stdout io.Writer) error {
	st, err := fetchStatus(ctx, srv)
	if err != nil {
		return err
	}
	for _, v := range st.Served {
		if v.Contract != c.contract {
			continue
		}
		if c.component == "" {
			c.component = v.Client
		}
		if c.fingerprint == "" && v.Version == c.ver {
			c.fingerprint = v.Fingerprint
		}
	}
	if c.component == "" {
		return fmt.Errorf("%s does not serve contract %s (it serves %s)", cell(st.Component), c.contract, servedList(st))
	}
	if c.fingerprint == "" {
		fmt.Fprintf(stdout, "refused: %s serves %s %s, not %s\n", cell(st.Component), c.contract, cell(strings.Join(st.Contracts[c.contract], ", ")), c.ver)
		return &refusedError{}
	}
	return nil
}

// report prints the dry run's answer: accepted, with what would be
// agreed, or refused, with the server's reason.
func (c *checkArgs) report(stdout io.Writer, a answer) error {
	if a.status == http.StatusOK {
		var w handshake.Welcome
		if err := json.Unmarshal(a.body, &w); err != nil {
			return fmt.Errorf("welcome did not decode: %w", err)
		}
		if w.Session != "" {
			return fmt.Errorf("the server opened a session (%s): it does not know dry runs; it is older than lockstepctl", cell(w.Peer.Release))
		}
		fmt.Fprintf(stdout, "accepted: %s %s (instance %s) would agree on %s %s with a %s offering %s\n",
			cell(w.Peer.Component), cell(w.Peer.Release), cell(w.Peer.Instance), c.contract, cell(w.Version), c.component, c.fingerprint)
		return nil
	}
	var we wireError
	if json.Unmarshal(a.body, &we) != nil || we.Code == "" {
		return errorOf(a, "handshake")
	}
	var refusal handshake.Refusal
	if len(we.Details) > 0 && json.Unmarshal(we.Details, &refusal) == nil && refusal.Reason != "" {
		fmt.Fprintf(stdout, "refused (%s): %s\n", cell(string(refusal.Reason)), text(refusal.Message))
		return &refusedError{}
	}
	// Not a negotiation refusal (unknown contract, session limit, …): the
	// client would not be accepted either, for the server's reason.
	fmt.Fprintf(stdout, "refused (%s): %s\n", cell(we.Code), text(we.Message))
	return &refusedError{}
}

// headerOnBehalfOf is the request header with which an operator's
// identity asks on behalf of a client component, naming that component:
// on a dry-run handshake (which claims the component in its hello too),
// and on a watch, which then carries no session. It is the one exception
// to "the certificate must name the component the hello claims"
// (docs/security.md): a server that accepts it admits the entry when the
// certificate names an operator identity (MTLSFiles.Operators), charges it
// to that identity, audits it, opens no session and claims no node. A
// server that does not know it refuses the claim as before
// (permission_denied for the dry run; for the watch, the session it
// lacks), which lockstepctl reports as that, never as a refusal.
const headerOnBehalfOf = protocol.HeaderOnBehalfOf

func servedList(st framework.ServerStatus) string {
	var out []string
	for _, v := range st.Served {
		out = append(out, cell(v.Contract)+" "+cell(v.Version))
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

// readContractFile reads what --contract-file names: a contract file, as
// the generator reads it (codegen/contract: YAML or JSON, its schemas
// resolved from the files it refers to), whose wire model is what the
// generated code's Contract.Fingerprint() hashes; or that wire model itself
// (the JSON form of handshake.Contract, or YAML of the same shape, as the
// fingerprint vectors are written). Both name the contract with
// "contract", and a wire model is a valid contract file, but the generator
// canonicalises the schemas it bundles: a file named as the generator
// finds contract files (contract.yaml, contract.yml, contract.json) is a
// contract file; any other is a wire model if it decodes as one exactly,
// else a contract file.
func readContractFile(path string) (handshake.Contract, error) {
	if !slices.Contains(contractfile.FileNames, filepath.Base(path)) {
		b, err := os.ReadFile(path)
		if err != nil {
			return handshake.Contract{}, err
		}
		m, modelErr := readWireModel(path, b)
		if modelErr == nil {
			return m, nil
		}
		c, err := contractfile.LoadFile(path)
		if err != nil {
			return handshake.Contract{}, fmt.Errorf("--contract-file %s is neither a contract file (%v) nor a contract's wire model (%v)", path, err, modelErr)
		}
		return c.Handshake(), nil
	}
	c, err := contractfile.LoadFile(path)
	if err != nil {
		return handshake.Contract{}, fmt.Errorf("--contract-file: %w", err)
	}
	return c.Handshake(), nil
}

// readWireModel reads a contract's wire model: JSON, or YAML of the same
// shape, every schema already self-contained.
func readWireModel(path string, b []byte) (handshake.Contract, error) {
	var m handshake.Contract
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		var doc any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return m, fmt.Errorf("--contract-file %s: %w", path, err)
		}
		var err error
		if b, err = json.Marshal(doc); err != nil {
			return m, fmt.Errorf("--contract-file %s: %w", path, err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("--contract-file %s is not a contract's wire model: %w", path, err)
	}
	if m.Name == "" || m.Version == "" {
		return m, fmt.Errorf("--contract-file %s names no contract and version", path)
	}
	return m, nil
}
