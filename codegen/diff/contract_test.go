package diff_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/diff"
	"github.com/lockstep-dev/lockstep/handshake"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// nodeStatus returns a small nodestatus contract at the given version; the
// tests change copies of it.
func nodeStatus(version string) *handshake.Contract {
	return &handshake.Contract{
		Name:    "nodestatus",
		Version: version,
		Server:  "nodecontroller",
		Client:  "kubelet",
		Methods: map[string]handshake.Method{
			"ReportStatus": {Request: "NodeStatus", Response: "Ack"},
			"ReportPods":   {Request: "PodStatus", Response: "Ack", Batch: true},
			"Ping":         {Request: "Ping", Response: "Ping", Idempotent: true},
		},
		Topics: map[string]handshake.Topic{
			"NodeHealth": {Object: "NodeHealth", Key: "node", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete},
			"Leases":     {Object: "Lease", Key: "holder", Writer: handshake.RoleClient, LostWriter: handshake.LostWriterDelete},
		},
		Schemas: map[string]json.RawMessage{
			"NodeStatus": json.RawMessage(`{
				"type": "object",
				"properties": {
					"node": {"type": "string"},
					"conditions": {"type": "array", "items": {"$ref": "#/$defs/Condition"}}
				},
				"required": ["node"],
				"$defs": {"Condition": {
					"type": "object",
					"properties": {"type": {"type": "string"}, "status": {"enum": ["True", "False", "Unknown"]}},
					"required": ["type", "status"]
				}}
			}`),
			"PodStatus":  json.RawMessage(`{"type": "object", "properties": {"pod": {"type": "string"}}}`),
			"Ack":        json.RawMessage(`{"type": "object", "properties": {"ok": {"type": "boolean"}}}`),
			"Ping":       json.RawMessage(`{"type": "object", "properties": {"mode": {"enum": ["fast", "slow"]}}}`),
			"NodeHealth": json.RawMessage(`{"type": "object", "properties": {"node": {"type": "string"}, "state": {"enum": ["ok", "bad"]}}}`),
			"Lease":      json.RawMessage(`{"type": "object", "properties": {"holder": {"type": "string"}, "state": {"enum": ["held"]}}}`),
		},
	}
}

// evolved returns the contract at version with a mix of changes, some
// breaking.
func evolved(version string) *handshake.Contract {
	c := nodeStatus(version)
	// Breaking for requests: conditions become required; a status value
	// goes away.
	c.Schemas["NodeStatus"] = json.RawMessage(`{
		"type": "object",
		"properties": {
			"node": {"type": "string"},
			"conditions": {"type": "array", "items": {"$ref": "#/$defs/Condition"}}
		},
		"required": ["node", "conditions"],
		"$defs": {"Condition": {
			"type": "object",
			"properties": {"type": {"type": "string"}, "status": {"enum": ["True", "False"]}},
			"required": ["type", "status"]
		}}
	}`)
	// Not breaking: an optional field in a response.
	c.Schemas["Ack"] = json.RawMessage(`{"type": "object", "properties": {"ok": {"type": "boolean"}, "retryAfter": {"type": "integer"}}}`)
	// Ping is request and response at once: a value added breaks only the
	// response use.
	c.Schemas["Ping"] = json.RawMessage(`{"type": "object", "properties": {"mode": {"enum": ["fast", "slow", "deep"]}}}`)
	// Breaking for a server-written topic: a state old watchers reject.
	c.Schemas["NodeHealth"] = json.RawMessage(`{"type": "object", "properties": {"node": {"type": "string"}, "state": {"enum": ["ok", "bad", "draining"]}}}`)
	// Not breaking for a client-written topic: the server accepts more.
	c.Schemas["Lease"] = json.RawMessage(`{"type": "object", "properties": {"holder": {"type": "string"}, "state": {"enum": ["held", "released"]}}}`)
	c.Methods["Ping"] = handshake.Method{Request: "Ping", Response: "Ping"}
	delete(c.Methods, "ReportPods")
	c.Methods["Drain"] = handshake.Method{Request: "PodStatus", Response: "Ack"}
	return c
}

func TestCompareGolden(t *testing.T) {
	t.Parallel()
	report, err := diff.Compare(nodeStatus("2.0.0"), evolved("2.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := report.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "report.txt", text.Bytes())

	encoded, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "report.json", append(encoded, '\n'))
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./codegen/diff -run Golden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (rerun with -update if the change is intended)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestReportJSONShape(t *testing.T) {
	t.Parallel()
	report, err := diff.Compare(nodeStatus("2.0.0"), nodeStatus("2.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	encoded, err := json.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"contract":"nodestatus","oldVersion":"2.0.0","newVersion":"2.0.1","majorBump":false,` +
		`"oldFingerprint":"lsfp1:da1ef511119c1ca0684ba17e6affc298b7d3bdf4755225d754e29ae32b8fcb4d",` +
		`"newFingerprint":"lsfp1:3e8f2de3034a328e11632bd995a4c7d59a04819fe11f008c28f8d8ea542e089f","changes":[]}`
	if string(encoded) != want {
		t.Errorf("got %s\nwant %s", encoded, want)
	}

	report, err = diff.Compare(nodeStatus("2.0.0"), evolved("3.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	encoded, err = json.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Contract   string           `json:"contract"`
		OldVersion string           `json:"oldVersion"`
		NewVersion string           `json:"newVersion"`
		MajorBump  bool             `json:"majorBump"`
		Changes    []map[string]any `json:"changes"`
	}
	if err := json.Unmarshal(encoded, &decoded); err != nil {
		t.Fatal(err)
	}
	if !decoded.MajorBump || decoded.NewVersion != "3.0.0" || len(decoded.Changes) == 0 {
		t.Fatalf("unexpected report %s", encoded)
	}
	for _, change := range decoded.Changes {
		var keys []string
		for key := range change {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"breaking", "kind", "message", "path", "where"}) &&
			!slices.Equal(keys, []string{"breaking", "breaksNewClient", "kind", "message", "path", "where"}) {
			t.Errorf("change has keys %v", keys)
		}
	}
}

func TestReportErr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// old and new are the contracts compared.
		old, new *handshake.Contract
		// breaking is the expected Report.Breaking.
		breaking bool
		// fails is the error Err must wrap, nil when it must be nil.
		fails error
		// says is a part of Err's message, when it fails.
		says string
	}{
		{"breaking without a major bump", nodeStatus("2.0.0"), evolved("2.1.0"), true, diff.ErrMajorBumpRequired, "bump the major version"},
		{"breaking with a major bump", nodeStatus("2.0.0"), evolved("3.0.0"), true, nil, ""},
		{"breaking with a patch bump", nodeStatus("2.0.0"), evolved("2.0.1"), true, diff.ErrMajorBumpRequired, "6 breaking changes"},
		{"breaking at the same version", nodeStatus("2.0.0"), evolved("2.0.0"), true, diff.ErrVersionNotBumped, "to a new major version"},
		{"breaking with a lower major", nodeStatus("2.0.0"), evolved("1.9.0"), true, diff.ErrMajorBumpRequired, ""},
		{"prefixed and short versions", nodeStatus("v2.3"), evolved("3"), true, nil, ""},
		{"no change", nodeStatus("2.0.0"), nodeStatus("2.0.0"), false, nil, ""},
		{"compatible change with a patch bump", nodeStatus("2.0.0"), compatibleOnly("2.0.1"), false, nil, ""},
		{"compatible change without a bump", nodeStatus("2.0.0"), compatibleOnly("2.0.0"), false, diff.ErrVersionNotBumped,
			"fingerprint_mismatch; bump the version (to a new minor version, since no change breaks old clients)"},
		{"only a description changed, no bump", nodeStatus("2.0.0"), described("2.0.0"), false, nil, ""},
	}
	for _, test := range tests {
		report, err := diff.Compare(test.old, test.new)
		if err != nil {
			t.Fatalf("%s: %v", test.name, err)
		}
		if report.Breaking() != test.breaking {
			t.Errorf("%s: Breaking() = %t, want %t", test.name, report.Breaking(), test.breaking)
		}
		err = report.Err()
		switch {
		case test.fails == nil && err != nil:
			t.Errorf("%s: Err() = %v, want nil", test.name, err)
		case test.fails != nil && !errors.Is(err, test.fails):
			t.Errorf("%s: Err() = %v, want it to wrap %q", test.name, err, test.fails)
		case err != nil && !strings.Contains(err.Error(), test.says):
			t.Errorf("%s: Err() = %v, want it to say %q", test.name, err, test.says)
		}
	}
}

// described returns the base contract with a schema description changed,
// which leaves the fingerprint as it was.
func described(version string) *handshake.Contract {
	c := nodeStatus(version)
	c.Schemas["Ack"] = json.RawMessage(`{"type": "object", "description": "An acknowledgement.", "properties": {"ok": {"type": "boolean"}}}`)
	return c
}

func compatibleOnly(version string) *handshake.Contract {
	c := nodeStatus(version)
	c.Schemas["Ack"] = json.RawMessage(`{"type": "object", "properties": {"ok": {"type": "boolean"}, "note": {"type": "string"}}}`)
	c.Methods["Drain"] = handshake.Method{Request: "PodStatus", Response: "Ack", Idempotent: true}
	return c
}

func TestCompareContractLevel(t *testing.T) {
	t.Parallel()
	type want struct {
		where    string
		kind     diff.Kind
		breaking bool
	}
	tests := []struct {
		name string
		// change turns a copy of the base contract into the new version.
		change func(c *handshake.Contract)
		// want lists every change expected, in report order.
		want []want
	}{
		{"contract renamed", func(c *handshake.Contract) { c.Name = "nodestate" },
			[]want{{"contract", diff.KindContractRenamed, true}}},
		{"roles changed", func(c *handshake.Contract) { c.Server, c.Client = "kubelet", "nodecontroller" },
			[]want{{"contract", diff.KindServerChanged, true}, {"contract", diff.KindClientChanged, true}}},
		{"method added", func(c *handshake.Contract) { c.Methods["Drain"] = handshake.Method{Request: "Ack", Response: "Ack"} },
			[]want{{"method Drain", diff.KindMethodAdded, false}}},
		{"method removed", func(c *handshake.Contract) { delete(c.Methods, "Ping") },
			[]want{{"method Ping", diff.KindMethodRemoved, true}}},
		{"idempotent removed", func(c *handshake.Contract) { c.Methods["Ping"] = handshake.Method{Request: "Ping", Response: "Ping"} },
			[]want{{"method Ping", diff.KindIdempotentRemoved, true}}},
		{"idempotent added", func(c *handshake.Contract) {
			c.Methods["ReportStatus"] = handshake.Method{Request: "NodeStatus", Response: "Ack", Idempotent: true}
		}, []want{{"method ReportStatus", diff.KindIdempotentAdded, false}}},
		{"batch changed", func(c *handshake.Contract) {
			c.Methods["ReportPods"] = handshake.Method{Request: "PodStatus", Response: "Ack"}
		},
			[]want{{"method ReportPods", diff.KindBatchChanged, true}}},
		{"path set", func(c *handshake.Contract) {
			c.Methods["Ping"] = handshake.Method{Request: "Ping", Response: "Ping", Idempotent: true, Path: "/ping"}
		}, []want{{"method Ping", diff.KindPathChanged, true}}},
		{"request message renamed, same schema", func(c *handshake.Contract) {
			c.Schemas["PodStatusV2"] = c.Schemas["PodStatus"]
			c.Methods["ReportPods"] = handshake.Method{Request: "PodStatusV2", Response: "Ack", Batch: true}
		}, []want{{"method ReportPods request", diff.KindMessageRenamed, false}}},
		{"response message replaced", func(c *handshake.Contract) {
			c.Methods["ReportStatus"] = handshake.Method{Request: "NodeStatus", Response: "Ping"}
		}, []want{
			{"method ReportStatus response", diff.KindMessageRenamed, false},
			{"method ReportStatus response", diff.KindFieldAdded, false},
			{"method ReportStatus response", diff.KindFieldRemoved, false},
		}},
		{"response body removed", func(c *handshake.Contract) {
			c.Methods["ReportStatus"] = handshake.Method{Request: "NodeStatus"}
		}, []want{{"method ReportStatus response", diff.KindMessageRemoved, true}}},
		{"topic added", func(c *handshake.Contract) {
			c.Topics["Pods"] = handshake.Topic{Object: "PodStatus", Key: "pod", Writer: handshake.RoleServer}
		},
			[]want{{"topic Pods", diff.KindTopicAdded, false}}},
		{"topic removed", func(c *handshake.Contract) { delete(c.Topics, "Leases") },
			[]want{{"topic Leases", diff.KindTopicRemoved, true}}},
		{"topic key and policy changed", func(c *handshake.Contract) {
			c.Topics["NodeHealth"] = handshake.Topic{Object: "NodeHealth", Key: "state", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterKeep}
		}, []want{{"topic NodeHealth", diff.KindTopicKeyChanged, true}, {"topic NodeHealth", diff.KindLostWriterChanged, true}}},
		{"selectors added and removed", func(c *handshake.Contract) {
			old := nodeStatus("2.0.0").Topics["NodeHealth"]
			old.Selectors = []string{"state"}
			c.Topics["NodeHealth"] = old
		}, []want{{"topic NodeHealth", diff.KindSelectorAdded, false}}},
		{"topic writer changed: object checked both ways", func(c *handshake.Contract) {
			c.Topics["Leases"] = handshake.Topic{Object: "Lease", Key: "holder", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete}
			c.Schemas["Lease"] = json.RawMessage(`{"type": "object", "properties": {"holder": {"type": "string"}, "state": {"enum": ["held", "released"]}}}`)
		}, []want{{"topic Leases", diff.KindTopicWriterChanged, true}, {"topic Leases object", diff.KindEnumValueAdded, true}}},
	}
	for _, test := range tests {
		newContract := nodeStatus("2.0.0")
		test.change(newContract)
		report, err := diff.Compare(nodeStatus("2.0.0"), newContract)
		if err != nil {
			t.Fatalf("%s: %v", test.name, err)
		}
		var got []want
		for _, change := range report.Changes {
			got = append(got, want{change.Where, change.Kind, change.Breaking})
		}
		if !slices.Equal(got, test.want) {
			t.Errorf("%s: got %+v\nwant %+v", test.name, got, test.want)
		}
	}
}

func TestCompareDirectionByUse(t *testing.T) {
	t.Parallel()
	report, err := diff.Compare(nodeStatus("2.0.0"), evolved("2.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]bool{}
	for _, change := range report.Changes {
		if change.Kind == diff.KindEnumValueAdded || change.Kind == diff.KindEnumValueRemoved {
			verdicts[change.Where+" "+string(change.Kind)] = change.Breaking
		}
	}
	want := map[string]bool{
		// Ping is both request and response: the added value breaks the
		// response use only.
		"method Ping request enum_value_added":  false,
		"method Ping response enum_value_added": true,
		// A removed value breaks the request.
		"method ReportStatus request enum_value_removed": true,
		// Server-written topic: widening breaks.
		"topic NodeHealth object enum_value_added": true,
		// Client-written topic: widening does not.
		"topic Leases object enum_value_added": false,
	}
	for key, breaking := range want {
		got, ok := verdicts[key]
		if !ok || got != breaking {
			t.Errorf("%s: got breaking=%t (found %t), want %t", key, got, ok, breaking)
		}
	}
}

func TestCompareErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// change spoils a copy of the new contract; nil passes no contract.
		change func(c *handshake.Contract) *handshake.Contract
		// want is a fragment of the expected error.
		want string
	}{
		{"nil contract", func(*handshake.Contract) *handshake.Contract { return nil }, "both contracts are required"},
		{"bad version", func(c *handshake.Contract) *handshake.Contract { c.Version = "two"; return c }, `version "two"`},
		{"missing message", func(c *handshake.Contract) *handshake.Contract { delete(c.Schemas, "Ack"); return c },
			`names message "Ack", which the contract does not define`},
		{"bad schema", func(c *handshake.Contract) *handshake.Contract {
			c.Schemas["Ack"] = json.RawMessage(`{"type": 5}`)
			return c
		}, `message "Ack": invalid schema`},
		{"bad JSON", func(c *handshake.Contract) *handshake.Contract {
			c.Schemas["Lease"] = json.RawMessage(`{"type": `)
			return c
		}, `message "Lease": schema is not valid JSON`},
	}
	for _, test := range tests {
		_, err := diff.Compare(nodeStatus("1.0.0"), test.change(nodeStatus("1.0.0")))
		if err == nil || !strings.Contains(err.Error(), test.want) {
			t.Errorf("%s: got %v, want an error containing %q", test.name, err, test.want)
		}
	}
}

func TestWriteTextNoChanges(t *testing.T) {
	t.Parallel()
	report, err := diff.Compare(nodeStatus("2.0.0"), nodeStatus("2.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := report.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if got, want := text.String(), "nodestatus 2.0.0 -> 2.0.1: no changes\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteTextReportsWriteErrors(t *testing.T) {
	t.Parallel()
	report := &diff.Report{Contract: "c", OldVersion: "1.0.0", NewVersion: "1.0.1"}
	if err := report.WriteText(failingWriter{}); err == nil {
		t.Error("WriteText to a failing writer returned nil")
	}
}

// TestSelectorRemovedBreaks: dropping a selector refuses the watch
// requests that name it, so it breaks; the reverse is an addition.
func TestSelectorRemovedBreaks(t *testing.T) {
	old := nodeStatus("2.0.0")
	topic := old.Topics["NodeHealth"]
	topic.Selectors = []string{"node", "state"}
	old.Topics["NodeHealth"] = topic
	report, err := diff.Compare(old, nodeStatus("2.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	var got []diff.Kind
	for _, c := range report.Changes {
		if c.Where == "topic NodeHealth" {
			got = append(got, c.Kind)
			if !c.Breaking {
				t.Errorf("%s is not breaking", c.Kind)
			}
		}
	}
	if !slices.Equal(got, []diff.Kind{diff.KindSelectorRemoved, diff.KindSelectorRemoved}) {
		t.Errorf("got %v", got)
	}
}

// TestCompatibleBothWays checks the other order a peer can be in: a new
// client calling an old server. An optional response field and a method
// added break neither order; a request type widened, a response tightened, a selector added and
// a method now idempotent break only that order.
func TestCompatibleBothWays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// change turns a copy of the base contract into the new version.
		change func(c *handshake.Contract)
		// newClientBreaks lists the kinds of the changes that break a new
		// client calling an old server; none means compatible both ways.
		newClientBreaks []diff.Kind
	}{
		{"optional response field and a method added", func(c *handshake.Contract) {
			c.Schemas["Ack"] = json.RawMessage(`{"type": "object", "properties": {"ok": {"type": "boolean"}, "note": {"type": "string"}}}`)
			c.Methods["Drain"] = handshake.Method{Request: "PodStatus", Response: "Ack"}
		}, nil},
		{"a topic added", func(c *handshake.Contract) {
			c.Topics["Drains"] = handshake.Topic{Object: "Lease", Key: "holder", Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete}
		}, nil},
		{"request type widened", func(c *handshake.Contract) {
			c.Schemas["PodStatus"] = json.RawMessage(`{"type": "object", "properties": {"pod": {"type": ["string", "integer"]}}}`)
		}, []diff.Kind{diff.KindTypeChanged}},
		{"selector added", func(c *handshake.Contract) {
			topic := c.Topics["NodeHealth"]
			topic.Selectors = []string{"node"}
			c.Topics["NodeHealth"] = topic
		}, []diff.Kind{diff.KindSelectorAdded}},
		{"method now idempotent", func(c *handshake.Contract) {
			c.Methods["ReportStatus"] = handshake.Method{Request: "NodeStatus", Response: "Ack", Idempotent: true}
		}, []diff.Kind{diff.KindIdempotentAdded}},
		{"response bound tightened", func(c *handshake.Contract) {
			c.Schemas["Ack"] = json.RawMessage(`{"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}`)
		}, []diff.Kind{diff.KindFieldNowRequired, diff.KindFieldNowRequired}}, // Ack answers two methods
	}
	for _, test := range tests {
		next := nodeStatus("2.1.0")
		test.change(next)
		report, err := diff.Compare(nodeStatus("2.0.0"), next)
		if err != nil {
			t.Fatalf("%s: %v", test.name, err)
		}
		var got []diff.Kind
		for _, c := range report.Changes {
			if c.BreaksNewClient {
				got = append(got, c.Kind)
			}
		}
		if !slices.Equal(got, test.newClientBreaks) {
			t.Errorf("%s: changes breaking new clients %v, want %v", test.name, got, test.newClientBreaks)
		}
		if report.CompatibleBothWays() != (len(test.newClientBreaks) == 0 && !report.Breaking()) {
			t.Errorf("%s: CompatibleBothWays() = %t", test.name, report.CompatibleBothWays())
		}
	}
}

// TestMemberAddedToClosedObjectIsDropped checks that an optional member
// added to objects that did not allow it breaks a peer that would receive
// the new value as it is, in both orders, but is marked Dropped: the
// generated conversions drop it going down, so it needs no major version
// and leaves the versions compatible both ways.
func TestMemberAddedToClosedObjectIsDropped(t *testing.T) {
	t.Parallel()
	closed := func(version string, extra string) *handshake.Contract {
		c := nodeStatus(version)
		c.Schemas["Ack"] = json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {"ok": {"type": "boolean"}` + extra + `}}`)
		c.Schemas["PodStatus"] = json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {"pod": {"type": "string"}` + extra + `}}`)
		return c
	}
	report, err := diff.Compare(closed("2.0.0", ""), closed("2.1.0", `, "note": {"type": "string"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Changes) == 0 {
		t.Fatal("no changes found")
	}
	for _, c := range report.Changes {
		if c.Kind != diff.KindFieldAdded || !c.Dropped || !(c.Breaking || c.BreaksNewClient) {
			t.Errorf("%s %s: %+v, want a field_added change marked Dropped that breaks one order", c.Where, c.Path, c)
		}
	}
	if report.Breaking() || report.Err() != nil || !report.CompatibleBothWays() {
		t.Errorf("Breaking() = %t, Err() = %v, CompatibleBothWays() = %t; want false, nil, true",
			report.Breaking(), report.Err(), report.CompatibleBothWays())
	}
	var text bytes.Buffer
	if err := report.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "0 breaking, compatible both ways") || !strings.Contains(text.String(), "DROPPED   method ReportStatus response") {
		t.Errorf("report:\n%s", &text)
	}
}
