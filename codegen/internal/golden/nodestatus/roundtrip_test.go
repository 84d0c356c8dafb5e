package nodestatus

import (
	"os"
	"testing"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

const k8sStatus = `{
  "nodeName": "node-7",
  "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"},
  "allocatable": {"cpu": "3800m", "memory": "15Gi", "pods": "110"},
  "phase": null,
  "conditions": [
    {"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-11-30T05:00:00Z", "lastTransitionTime": "2026-11-29T00:00:00Z", "reason": "KubeletReady", "message": "kubelet is posting ready status"},
    {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": null}
  ],
  "addresses": [{"type": "InternalIP", "address": "10.0.0.7"}, {"type": "Hostname", "address": "node-7"}],
  "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
  "nodeInfo": {"machineID": "m", "kernelVersion": "6.1", "kubeletVersion": "v1.31.2", "operatingSystem": "linux", "architecture": "amd64"},
  "images": [{"names": ["registry.k8s.io/pause:3.9"], "sizeBytes": 321520}, {"names": null}],
  "volumesInUse": null,
  "volumesAttached": [],
  "config": {"active": {"configMap": {"namespace": "kube-system", "name": "kubelet", "kubeletConfigKey": "kubelet"}}, "assigned": {"configMap": null}}
}`

func TestRoundTrip(t *testing.T) {
	s := roundtrip.Check[NodeStatus](t, Contract, "NodeStatus", k8sStatus)
	if s.Capacity["memory"] != "16Gi" || !s.Conditions[1].LastHeartbeatTime.IsNull() || !s.Phase.IsNull() || !s.VolumesInUse.IsNull() {
		t.Errorf("decoded %+v", s)
	}
	images, _ := s.Images.Get()
	if s.DaemonEndpoints.KubeletEndpoint.Port != 10250 || len(images) != 2 || !images[1].Names.IsNull() {
		t.Errorf("decoded %+v", s)
	}
	roundtrip.Check[NodeStatus](t, Contract, "NodeStatus", `{"nodeName": "n", "conditions": [], "capacity": {}, "allocatable": {}, "config": null, "images": null}`)
	roundtrip.Check[PodStatus](t, Contract, "PodStatus", `{"uid": "u", "phase": "Running", "podIP": null, "startTime": "2026-11-30T05:00:00Z"}`)
}

func TestBenchMessage(t *testing.T) {
	data, err := os.ReadFile("testdata/nodestatus.json")
	if err != nil {
		t.Fatal(err)
	}
	b := roundtrip.Check[BenchNodeStatus](t, Contract, "BenchNodeStatus", string(data))
	if b.NodeName != "node-0007" || len(b.Conditions) == 0 || b.Conditions[0].Type != NodeConditionTypeReady {
		t.Errorf("decoded %+v", b)
	}
	roundtrip.Check[Ack](t, Contract, "Ack", `{"accepted": true, "generation": 3}`)
}
