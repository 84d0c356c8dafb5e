package handshake_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/handshake"
)

const goodFingerprint = "lsfp1:0000000000000000000000000000000000000000000000000000000000000000"

func helloJSON(extra string) string {
	return `{"contract":"nodestatus","component":"kubelet","instance":"i1","release":"1.31.0",` +
		`"offers":[{"version":"2.0.0","fingerprint":"` + goodFingerprint + `"}]` + extra + `}`
}

func TestDecodeHello(t *testing.T) {
	cases := []struct {
		name string
		body string
		// wantErr is a fragment of the error, or "" for a hello that decodes.
		wantErr string
	}{
		{"valid", helloJSON(""), ""},
		{"duplicate key", helloJSON(`,"component":"scheduler"`), "appears twice"},
		{"duplicate key in another case", helloJSON(`,"Component":"scheduler"`), "appears twice"},
		{"key in another case alone", strings.Replace(helloJSON(""), `"instance"`, `"Instance"`, 1), `key "Instance" is spelt "instance"`},
		{"key folding to a member under Unicode folding", strings.Replace(helloJSON(""), `"instance"`, `"in\u017ftance"`, 1), `is spelt "instance"`},
		{"offer key in another case alone", strings.Replace(helloJSON(""), `"fingerprint"`, `"FingerPrint"`, 1), `key "FingerPrint" is spelt "fingerprint"`},
		{"unknown key is ignored", helloJSON(`,"admin":true`), ""},
		{"unknown key holding an object is ignored", helloJSON(`,"future":{"a":[1,{"b":null}],"Contract":"x"}`), ""},
		{"unknown key in an offer is ignored", strings.Replace(helloJSON(""), `"version":"2.0.0"`, `"version":"2.0.0","weight":3,"compatibleWith":["1.0.0"]`, 1), ""},
		{"an offer's member at the top level is unknown there", helloJSON(`,"Version":"9"`), ""},
		{"duplicate key inside an unknown member", helloJSON(`,"future":{"a":1,"A":2}`), "appears twice"},
		{"duplicate unknown key", helloJSON(`,"future":1,"future":2`), "appears twice"},
		{"duplicate key in an offer", strings.Replace(helloJSON(""), `"version":"2.0.0"`, `"version":"2.0.0","Version":"1.0.0"`, 1), "appears twice"},
		{"invalid UTF-8", strings.Replace(helloJSON(""), `"i1"`, "\"i\xff1\"", 1), "UTF-8"},
		{"control character", strings.Replace(helloJSON(""), `"i1"`, `"i\u00071"`, 1), "control character"},
		{"escaped invalid surrogate", strings.Replace(helloJSON(""), `"i1"`, `"i\ud8001"`, 1), "control character"},
		{"long instance", strings.Replace(helloJSON(""), `"i1"`, `"`+strings.Repeat("a", 254)+`"`, 1), "at most 253"},
		{"instance at the bound", strings.Replace(helloJSON(""), `"i1"`, `"`+strings.Repeat("a", 253)+`"`, 1), ""},
		{"long release", strings.Replace(helloJSON(""), `"1.31.0"`, `"1.`+strings.Repeat("1", 300)+`"`, 1), "at most 253"},
		{"trailing data", helloJSON("") + `{}`, "after its JSON value"},
		{"deep nesting", `{"offers":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, "deeper"},
		{"not JSON", `{"contract":`, "not valid JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := handshake.DecodeHello([]byte(tc.body))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("DecodeHello: %v", err)
				}
				if h.Component != "kubelet" {
					t.Fatalf("component = %q", h.Component)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("DecodeHello error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestDecodeHelloFutureMembers: a hello from a newer peer, with members
// this version does not know at the top level and in its offers, decodes
// to exactly the hello without them.
func TestDecodeHelloFutureMembers(t *testing.T) {
	plain, err := handshake.DecodeHello([]byte(helloJSON("")))
	if err != nil {
		t.Fatal(err)
	}
	future := strings.Replace(helloJSON(`,"extraField":{"nested":[1,2]},"protocol":2`),
		`"version":"2.0.0"`, `"extraField":"x","version":"2.0.0","derivesFrom":"1.0.0"`, 1)
	got, err := handshake.DecodeHello([]byte(future))
	if err != nil {
		t.Fatalf("DecodeHello of a hello with future members: %v", err)
	}
	if !reflect.DeepEqual(got, plain) {
		t.Fatalf("hello with future members decodes to %+v, without them to %+v", got, plain)
	}
}

func TestDecodeWelcome(t *testing.T) {
	const base = `{"session":"s1","version":"2.0.0","fingerprint":"` + goodFingerprint + `",` +
		`"peer":{"component":"nodecontroller","instance":"e1","release":"1.31.2"},"heartbeat":"1s","ttl":"5s"`
	want := handshake.Welcome{Session: "s1", Version: "2.0.0", Fingerprint: goodFingerprint,
		Peer:      handshake.Peer{Component: "nodecontroller", Instance: "e1", Release: "1.31.2"},
		Heartbeat: handshake.Duration(time.Second), TTL: handshake.Duration(5 * time.Second)}
	cases := []struct {
		name, body, wantErr string
	}{
		{"valid", base + `}`, ""},
		{"future members ignored", strings.Replace(base, `"release":"1.31.2"`, `"release":"1.31.2","zone":"b"`, 1) + `,"compatible":["1.0.0"],"limits":{"x":1}}`, ""},
		{"duplicate version", base + `,"Version":"1.0.0"}`, "appears twice"},
		{"case variant alone", strings.Replace(base, `"session"`, `"Session"`, 1) + `}`, `is spelt "session"`},
		{"case variant in the peer", strings.Replace(base, `"component"`, `"COMPONENT"`, 1) + `}`, `is spelt "component"`},
		{"no session", strings.Replace(base, `"s1"`, `""`, 1) + `}`, "no session"},
		{"not JSON", base, "not valid JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := handshake.DecodeWelcome([]byte(tc.body))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("DecodeWelcome: %v", err)
				}
				if w != want {
					t.Fatalf("welcome = %+v, want %+v", w, want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("DecodeWelcome error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestDecodeHelloOffersBound(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"contract":"c","component":"k","instance":"i","offers":[`)
	for i := 0; i < handshake.MaxOffers+1; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"version":"1.0.` + itoa(i) + `","fingerprint":"` + goodFingerprint + `"}`)
	}
	b.WriteString(`]}`)
	_, err := handshake.DecodeHello([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "at most 64 allowed") {
		t.Fatalf("DecodeHello of 65 offers: %v", err)
	}
	huge := `{"contract":"c","component":"k","instance":"` + strings.Repeat("i", handshake.MaxHelloBytes) + `"}`
	if _, err := handshake.DecodeHello([]byte(huge)); err == nil || !strings.Contains(err.Error(), "at most 65536 allowed") {
		t.Fatalf("DecodeHello of a 64 KiB hello: %v", err)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// FuzzDecodeHello checks that no body makes DecodeHello panic, and that a
// hello it accepts has names that pass CheckName and survives a round trip.
func FuzzDecodeHello(f *testing.F) {
	f.Add([]byte(helloJSON("")))
	f.Add([]byte(helloJSON(`,"Component":"scheduler"`)))
	f.Add([]byte("{\"contract\":\"\xff\"}"))
	f.Add([]byte(`[[[[{}]]]]`))
	f.Add([]byte(`{"offers":[{"version":"1","fingerprint":"x"}],"peerRelease":">= 1"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		h, err := handshake.DecodeHello(body)
		if err != nil {
			return
		}
		for _, name := range []string{h.Contract, h.Component, h.Instance} {
			if err := handshake.CheckName("name", name); err != nil {
				t.Fatalf("accepted hello with a bad name: %v", err)
			}
		}
		again, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := handshake.DecodeHello(again); err != nil {
			t.Fatalf("re-encoded hello refused: %v", err)
		}
	})
}

// MaxItems enters the fingerprint only when set: contracts without it keep
// the fingerprints they had (the golden vectors pin those).
func TestFingerprintMaxItemsOnlyWhenSet(t *testing.T) {
	c := &handshake.Contract{Name: "c", Version: "1.0.0", Server: "s", Client: "k",
		Methods: map[string]handshake.Method{"Put": {Request: "M", Response: "M", Batch: true}},
		Schemas: map[string]json.RawMessage{"M": json.RawMessage(`{"type":"object"}`)}}
	canon, err := handshake.Canonical(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(canon), "maxItems") {
		t.Fatalf("canonical form names maxItems while unset: %s", canon)
	}
	before, _ := handshake.Fingerprint(c)
	m := c.Methods["Put"]
	m.MaxItems = 500
	c.Methods["Put"] = m
	canon, _ = handshake.Canonical(c)
	if !strings.Contains(string(canon), `"maxItems":500`) {
		t.Fatalf("canonical form lacks maxItems: %s", canon)
	}
	after, _ := handshake.Fingerprint(c)
	if before == after {
		t.Fatal("setting maxItems left the fingerprint unchanged")
	}
}
