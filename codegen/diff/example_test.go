package diff_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/lockstep-dev/lockstep/codegen/diff"
	"github.com/lockstep-dev/lockstep/handshake"
)

// A status message gains a value in an enum. As a request it is fine: the
// new server accepts more. As a response it breaks: old clients reject the
// new value.
func ExampleCompatible() {
	oldSchema := json.RawMessage(`{"type": "object", "properties": {"phase": {"enum": ["Pending", "Running"]}}}`)
	newSchema := json.RawMessage(`{"type": "object", "properties": {"phase": {"enum": ["Pending", "Running", "Failed"]}}}`)
	for _, dir := range []diff.Direction{diff.Request, diff.Response} {
		changes, err := diff.Compatible(oldSchema, newSchema, dir)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, change := range changes {
			fmt.Printf("%s: %s %s breaking=%t\n", dir, change.Kind, change.Path, change.Breaking)
		}
	}
	// Output:
	// request: enum_value_added /properties/phase/enum breaking=false
	// response: enum_value_added /properties/phase/enum breaking=true
}

func ExampleCompare() {
	oldContract := &handshake.Contract{
		Name: "nodestatus", Version: "2.0.0", Server: "nodecontroller", Client: "kubelet",
		Methods: map[string]handshake.Method{"ReportStatus": {Request: "NodeStatus", Response: "Ack"}},
		Schemas: map[string]json.RawMessage{
			"NodeStatus": json.RawMessage(`{"type": "object", "properties": {"node": {"type": "string"}}}`),
			"Ack":        json.RawMessage(`{"type": "object"}`),
		},
	}
	newContract := &handshake.Contract{
		Name: "nodestatus", Version: "2.1.0", Server: "nodecontroller", Client: "kubelet",
		Methods: map[string]handshake.Method{"ReportStatus": {Request: "NodeStatus", Response: "Ack"}},
		Schemas: map[string]json.RawMessage{
			"NodeStatus": json.RawMessage(`{"type": "object", "properties": {"node": {"type": "string"}}, "required": ["node"]}`),
			"Ack":        json.RawMessage(`{"type": "object"}`),
		},
	}
	report, err := diff.Compare(oldContract, newContract)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := report.WriteText(os.Stdout); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(report.Err())
	// Output:
	// nodestatus 2.0.0 -> 2.1.0: 1 change, 1 breaking, major version not bumped
	//   BREAKING  method ReportStatus request #/required: field "node" is now required; old clients may omit it, and the new server rejects that [field_now_required]
	// contract nodestatus 2.0.0 -> 2.1.0: breaking change without a major version bump (1 breaking change); bump the major version
}
