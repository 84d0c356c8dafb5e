package gomodel

import "testing"

func TestGoName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		// in is a JSON member name.
		in string
		// want is the Go name it becomes.
		want string
	}{
		{"nodeName", "NodeName"},
		{"machineID", "MachineID"},
		{"systemUUID", "SystemUUID"},
		{"podIp", "PodIP"},
		{"HTTPServer", "HTTPServer"},
		{"depends_on", "DependsOn"},
		{"x-team", "XTeam"},
		{"$ref", "Ref"},
		{"2fa", "X2fa"},
		{"", "Empty"},
		{"Already Spaced", "AlreadySpaced"},
		{"osImage", "OSImage"},
		{"gpu", "GPU"},
		{"nvidia.com/gpu", "NvidiaComGPU"},
		{"resourceTpu", "ResourceTPU"},
		{"héllo", "HU" + "e9llo"},
	}
	for _, tt := range tests {
		if got := GoName(tt.in); got != tt.want {
			t.Errorf("GoName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNameSetUnique(t *testing.T) {
	t.Parallel()
	s := nameSet{"Client": true}
	if got := s.unique("Client"); got != "Client2" {
		t.Errorf("unique(Client) = %q", got)
	}
	if got := s.unique("Client"); got != "Client3" {
		t.Errorf("second unique(Client) = %q", got)
	}
}
