package benchgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// reorder rewrites every object of data with its members in reverse order,
// a space around each name and value, and names escaped as \u sequences
// where escape is set: the same value, in a form in which the generated
// decoder's guess of the next member (jsonwire's Ahead) never matches.
func reorder(t *testing.T, data []byte, escape bool) []byte {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var write func(v any)
	write = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			// Sorted names, reversed: the opposite of declaration
			// order for at least one pair in every struct here.
			names := slices.Sorted(maps.Keys(v))
			slices.Reverse(names)
			b.WriteString("{ ")
			for i, k := range names {
				if i > 0 {
					b.WriteString(" , ")
				}
				if escape {
					b.WriteByte('"')
					for _, r := range k {
						fmt.Fprintf(&b, `\u%04X`, r)
					}
					b.WriteByte('"')
				} else {
					q, _ := json.Marshal(k)
					b.Write(q)
				}
				b.WriteString(" : ")
				write(v[k])
			}
			b.WriteString(" }")
		case []any:
			b.WriteString("[ ")
			for i, e := range v {
				if i > 0 {
					b.WriteString(" , ")
				}
				write(e)
			}
			b.WriteString(" ]")
		default:
			q, _ := json.Marshal(v)
			b.Write(q)
		}
	}
	write(v)
	return []byte(b.String())
}

// asAny is data as encoding/json reads it into interface values.
func asAny(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestDecodeAnyMemberOrder checks that the generated decoder reads the
// benchmark object the same whatever the order, spacing and escaping of
// its members, and the same as encoding/json: the decoded value, encoded
// again, is the input as encoding/json reads it.
func TestDecodeAnyMemberOrder(t *testing.T) {
	canonical := benchObject(t)
	var want NodeStatus
	if err := want.UnmarshalJSON(canonical); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(&want)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(asAny(t, again), asAny(t, canonical)) {
		t.Fatalf("decoded and encoded again:\n%s\nnot the input:\n%s", again, canonical)
	}
	for _, escape := range []bool{false, true} {
		in := reorder(t, canonical, escape)
		for name, decode := range map[string]func(*NodeStatus, []byte) error{
			"UnmarshalJSON": (*NodeStatus).UnmarshalJSON, "UnmarshalSharedJSON": (*NodeStatus).UnmarshalSharedJSON,
		} {
			var got NodeStatus
			if err := decode(&got, in); err != nil {
				t.Fatalf("%s of %s: %v", name, in, err)
			}
			if !reflect.DeepEqual(&got, &want) {
				t.Errorf("%s of\n%s\ngot %+v\nwant %+v", name, in, got, want)
			}
		}
	}
}

// TestDecodeMembersOutOfTheExpectedPlace covers what the guess of the next
// member must not change: a repeated member (the last one wins, as with
// encoding/json), an absent optional member and a null one, an undeclared
// member after a guessed one, and a required member missing.
func TestDecodeMembersOutOfTheExpectedPlace(t *testing.T) {
	const cond = `{"type":"Ready","status":"True","reason":"a","message":"m","lastHeartbeatTime":"2026-11-30T05:00:00Z"}`
	for _, tc := range []struct {
		name, in string
		check    func(t *testing.T, c *NodeCondition)
		keyword  string
	}{
		{"repeated", `{"type":"Ready","status":"True","reason":"a","reason":"b"}`, func(t *testing.T, c *NodeCondition) {
			if c.Reason == nil || *c.Reason != "b" {
				t.Errorf("reason %v, want the last one, b", c.Reason)
			}
		}, ""},
		{"repeated first after the rest", cond[:len(cond)-1] + `,"type":"Other"}`, func(t *testing.T, c *NodeCondition) {
			if c.Type != "Other" || c.LastHeartbeatTime == nil {
				t.Errorf("got %+v", c)
			}
		}, ""},
		{"absent optional", `{"type":"Ready","status":"True","message":"m"}`, func(t *testing.T, c *NodeCondition) {
			if c.Reason != nil || c.Message == nil || *c.Message != "m" {
				t.Errorf("got %+v", c)
			}
		}, ""},
		{"whole", cond, func(t *testing.T, c *NodeCondition) {
			if c.Type != "Ready" || c.Status != "True" || *c.Reason != "a" || *c.Message != "m" || c.LastHeartbeatTime.Year() != 2026 {
				t.Errorf("got %+v", c)
			}
		}, ""},
		{"undeclared after a guessed member", `{"type":"Ready","statuses":"True"}`, nil, "additionalProperties"},
		{"name that starts like the next", `{"type":"Ready","status2":"True","status":"True"}`, nil, "additionalProperties"},
		{"required missing", `{"type":"Ready","reason":"a"}`, nil, "required"},
		{"null where no null is allowed", `{"type":"Ready","status":"True","reason":null}`, nil, "type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c NodeCondition
			err := c.UnmarshalJSON([]byte(tc.in))
			if tc.keyword == "" {
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, &c)
				return
			}
			var de *jsonwire.DecodeError
			if !errors.As(err, &de) || de.Keyword != tc.keyword {
				t.Fatalf("error %v, want one with keyword %q", err, tc.keyword)
			}
		})
	}
}
