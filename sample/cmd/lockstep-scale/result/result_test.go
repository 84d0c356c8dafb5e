package result

import (
	"encoding/json"
	"testing"
)

// The harness fills a run's date, command and kube-controller-manager's
// flags before it reads the program's output into the same Result:
// neither an output that leaves them out nor one that names them empty
// erases them.
func TestReadRunKeepsTheHarnessesDateAndCommand(t *testing.T) {
	program, err := json.Marshal(Result{Path: "lockstep", Nodes: 2000, EtcdPutsPerSec: 6.7})
	if err != nil {
		t.Fatal(err)
	}
	older := []byte(`{"path": "lockstep", "nodes": 2000, "etcdPutsPerSecond": 6.7, "date": "", "command": "", "controllerManagerArgs": ""}`)
	for _, out := range [][]byte{program, older} {
		res := Result{Path: "lockstep", Nodes: 2000, Date: "2026-12-07 18:00 UTC", Command: "lockstep-scale --nodes 2000",
			ControllerManagerArgs: "--node-monitor-period=1s"}
		if err := res.ReadRun(out); err != nil {
			t.Fatal(err)
		}
		if res.Date != "2026-12-07 18:00 UTC" || res.Command != "lockstep-scale --nodes 2000" || res.ControllerManagerArgs != "--node-monitor-period=1s" {
			t.Errorf("after reading %s: date %q, command %q, kube-controller-manager %q", out, res.Date, res.Command, res.ControllerManagerArgs)
		}
		if res.EtcdPutsPerSec != 6.7 {
			t.Errorf("after reading %s: etcd puts/s %v, want 6.7", out, res.EtcdPutsPerSec)
		}
	}
	if err := new(Result).ReadRun([]byte("{")); err == nil {
		t.Error("a truncated output was read without an error")
	}
}
