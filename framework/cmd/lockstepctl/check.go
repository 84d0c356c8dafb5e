package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

func runCheck(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var conn connFlags
	conn.register(fs)
	contract := fs.String("contract", "", "the contract (required)")
	ver := fs.String("version", "", "the contract version the client would offer (required)")
	fingerprint := fs.String("fingerprint", "", "the fingerprint the client would offer (default: the server's for that version, so only the version is checked)")
	file := fs.String("contract-file", "", "a contract's wire model (JSON or YAML, the form handshake.Contract and the fingerprint vectors use), whose fingerprint is offered")
	component := fs.String("component", "", "the client component to ask as (default: the contract's client, from the server's status)")
	release := fs.String("release", "", "the client release to ask as (checked against the server's release constraint)")
	pos, err := parse(fs, args, "URL")
	if err != nil {
		return err
	}
	if *contract == "" || *ver == "" {
		return usageError("check needs --contract and --version")
	}
	if *fingerprint != "" && *file != "" {
		return usageError("give --fingerprint or --contract-file, not both")
	}
	if *file != "" {
		m, err := readWireModel(*file)
		if err != nil {
			return err
		}
		if m.Name != *contract || m.Version != *ver {
			return fmt.Errorf("--contract-file %s is %s %s, not %s %s", *file, m.Name, m.Version, *contract, *ver)
		}
		if *fingerprint, err = handshake.Fingerprint(&m); err != nil {
			return fmt.Errorf("--contract-file %s: %w", *file, err)
		}
	}
	base, err := baseURL(pos[0])
	if err != nil {
		return err
	}
	hc, err := conn.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, conn.timeout)
	defer cancel()
	if *fingerprint == "" || *component == "" {
		st, err := fetchStatus(ctx, hc, conn.maxBytes, base)
		if err != nil {
			return err
		}
		for _, v := range st.Served {
			if v.Contract != *contract {
				continue
			}
			if *component == "" {
				*component = v.Client
			}
			if *fingerprint == "" && v.Version == *ver {
				*fingerprint = v.Fingerprint
			}
		}
		if *component == "" {
			return fmt.Errorf("%s does not serve contract %s (it serves %s)", cell(st.Component), *contract, servedList(st))
		}
		if *fingerprint == "" {
			fmt.Fprintf(stdout, "refused: %s serves %s %s, not %s\n", cell(st.Component), *contract, cell(strings.Join(st.Contracts[*contract], ", ")), *ver)
			return &refusedError{}
		}
	}
	hello := handshake.Hello{Contract: *contract, Component: *component, Instance: "lockstepctl-check",
		Release: *release, Offers: []handshake.Offer{{Version: *ver, Fingerprint: *fingerprint}}}
	a, err := do(ctx, hc, conn.maxBytes, http.MethodPost, base+protocol.PathHandshake+"?"+protocol.QueryDryRun+"=1", nil, hello)
	if err != nil {
		return err
	}
	if a.status == http.StatusOK {
		var w handshake.Welcome
		if err := json.Unmarshal(a.body, &w); err != nil {
			return fmt.Errorf("welcome did not decode: %w", err)
		}
		if w.Session != "" {
			return fmt.Errorf("the server opened a session (%s): it does not know dry runs; it is older than lockstepctl", cell(w.Peer.Release))
		}
		fmt.Fprintf(stdout, "accepted: %s %s (instance %s) would agree on %s %s with a %s offering %s\n",
			cell(w.Peer.Component), cell(w.Peer.Release), cell(w.Peer.Instance), *contract, cell(w.Version), *component, *fingerprint)
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

// readWireModel reads a contract's wire model: JSON, or YAML of the same
// shape. It is the language-neutral form the fingerprint covers, with every
// schema already self-contained (the fingerprint vectors are in it); a
// contract file with references to other files is the generator's input,
// not this, and its fingerprint is what generated code's
// Contract.Fingerprint() returns.
func readWireModel(path string) (handshake.Contract, error) {
	var m handshake.Contract
	b, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		var doc any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return m, fmt.Errorf("--contract-file %s: %w", path, err)
		}
		if b, err = json.Marshal(doc); err != nil {
			return m, fmt.Errorf("--contract-file %s: %w", path, err)
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("--contract-file %s is not a contract's wire model: %w", path, err)
	}
	if m.Name == "" || m.Version == "" {
		return m, fmt.Errorf("--contract-file %s names no contract and version", path)
	}
	return m, nil
}
