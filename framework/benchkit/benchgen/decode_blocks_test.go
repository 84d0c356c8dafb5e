package benchgen

import (
	"testing"
	"time"
	"unsafe"
)

// TestSliceElementsShareOneExactBlockArray: the pointer members of a
// slice's struct elements live in one array of blocks made when the
// slice's length is known, one block for each element that has any:
// every element gets its own values, an element without pointer members
// gets no block and keeps nil pointers, and a member given twice keeps
// the last value.
func TestSliceElementsShareOneExactBlockArray(t *testing.T) {
	data := []byte(`{"nodeName":"n","conditions":[` +
		`{"type":"Ready","status":"True","reason":"a","message":"m","lastHeartbeatTime":"2026-11-30T05:00:00Z"},` +
		`{"type":"DiskPressure","status":"False"},` +
		`{"type":"PIDPressure","status":"False","lastHeartbeatTime":"2026-11-30T05:00:01Z","reason":"b","reason":"c"}` +
		`],"capacity":{},"allocatable":{},"addresses":[],"nodeInfo":{},"images":[]}`)
	var m NodeStatus
	if err := m.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	c := m.Conditions
	if len(c) != 3 {
		t.Fatalf("%d conditions, want 3", len(c))
	}
	if c[0].Reason == nil || *c[0].Reason != "a" || c[0].Message == nil || *c[0].Message != "m" ||
		c[0].LastHeartbeatTime == nil || !c[0].LastHeartbeatTime.Equal(time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)) {
		t.Errorf("condition 0: %+v", c[0])
	}
	if c[1].Reason != nil || c[1].Message != nil || c[1].LastHeartbeatTime != nil {
		t.Errorf("condition 1 has pointer members it was not given: %+v", c[1])
	}
	if c[2].Reason == nil || *c[2].Reason != "c" || c[2].Message != nil ||
		c[2].LastHeartbeatTime == nil || !c[2].LastHeartbeatTime.Equal(time.Date(2026, 11, 30, 5, 0, 1, 0, time.UTC)) {
		t.Errorf("condition 2: %+v", c[2])
	}
	// The blocks of elements 0 and 2 are neighbours in one array.
	block := unsafe.Sizeof(pointersOfNodeCondition{})
	if d := uintptr(unsafe.Pointer(c[2].Reason)) - uintptr(unsafe.Pointer(c[0].Reason)); d != block {
		t.Errorf("the blocks of elements 0 and 2 are %d bytes apart, want %d (one array)", d, block)
	}
	*c[0].Reason = "changed"
	if *c[2].Reason != "c" {
		t.Error("elements share a block")
	}
}

// TestDecodeAllocations: decoding the benchmark object allocates the
// message's parts and no more: each slice once, the conditions' blocks
// once, the node info's block, and two for each of the two maps (a Go
// map's header and its group).
func TestDecodeAllocations(t *testing.T) {
	data := benchObject(t)
	var m NodeStatus
	allocs := testing.AllocsPerRun(100, func() {
		if err := m.UnmarshalSharedJSON(data); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 9 {
		t.Errorf("a decode of the benchmark object allocates %v times, want 9", allocs)
	}
}
