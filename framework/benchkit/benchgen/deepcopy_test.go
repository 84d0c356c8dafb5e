package benchgen

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
)

// TestDeepCopySharesOnlyStrings: the generated DeepCopy of the benchmark
// object (every kind of field it has: slices of structs, maps, pointers
// to strings and times, nested structs) equals the original, as
// encoding/json sees it and field by field, and shares no slice, map or
// pointer with it, so an informer's copy is its own; and modifying the
// copy leaves the original as it was.
func TestDeepCopySharesOnlyStrings(t *testing.T) {
	var m NodeStatus
	if err := m.UnmarshalSharedJSON(benchObject(t)); err != nil {
		t.Fatal(err)
	}
	before, err := json.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	c := m.DeepCopy()
	if !reflect.DeepEqual(&m, c) {
		t.Fatalf("the copy differs:\n%+v\n%+v", m, *c)
	}
	if got, _ := json.Marshal(c); string(got) != string(before) {
		t.Fatalf("the copy encodes as\n%s\nnot\n%s", got, before)
	}
	noSharedReferences(t, "NodeStatus", reflect.ValueOf(&m).Elem(), reflect.ValueOf(c).Elem())

	*c.Conditions[0].Reason = "changed"
	*c.Conditions[0].LastHeartbeatTime = c.Conditions[0].LastHeartbeatTime.Add(1)
	c.Capacity["cpu"] = "changed"
	c.Images[0] = "changed"
	c.Addresses[0].Address = "changed"
	*c.NodeInfo.KubeletVersion = "changed"
	if after, _ := json.Marshal(&m); string(after) != string(before) {
		t.Fatalf("modifying the copy changed the original:\n%s", after)
	}
	if (*NodeStatus)(nil).DeepCopy() != nil {
		t.Error("a nil message copies as non-nil")
	}
}

// noSharedReferences fails when a and b (equal values of one type) share
// the memory of a pointer, slice or map anywhere within them.
func noSharedReferences(t *testing.T, at string, a, b reflect.Value) {
	t.Helper()
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: the copy shares the pointer", at)
		}
		noSharedReferences(t, at, a.Elem(), b.Elem())
	case reflect.Slice:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			t.Errorf("%s: the copy shares the slice", at)
		}
		for k := range a.Len() {
			noSharedReferences(t, at+"/"+strconv.Itoa(k), a.Index(k), b.Index(k))
		}
	case reflect.Map:
		if !a.IsNil() && a.UnsafePointer() == b.UnsafePointer() {
			t.Errorf("%s: the copy shares the map", at)
		}
	case reflect.Struct:
		for k := range a.NumField() {
			noSharedReferences(t, at+"."+a.Type().Field(k).Name, a.Field(k), b.Field(k))
		}
	}
}
