package handshake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// DecodeHello decodes the body of a handshake as an untrusted peer's input
// must be read, so that every reader of it reads the same hello:
//
//   - the body must be valid UTF-8, at most 32 levels deep, with nothing
//     after the hello;
//   - no object in it may repeat a key, compared as encoding/json compares
//     names (case-insensitively, by Unicode simple folding): encoding/json
//     lets the last duplicate win, so {"component":"kubelet",
//     "Component":"scheduler"} would be read as whichever came last while
//     an authorizer or another implementation read the other;
//   - a key that folds to a member of the hello or of an offer must be spelt
//     exactly as the wire names it ("Instance" is refused, not read as
//     "instance"), for the same reason;
//   - any other member, of the hello or of an offer, is ignored: it is a
//     member a newer peer added, and an older server must still welcome it.
//
// The decoded hello is then checked with [Hello.Validate]. A body over
// [MaxHelloBytes] is refused before it is looked at.
func DecodeHello(body []byte) (Hello, error) {
	var h Hello
	if len(body) > MaxHelloBytes {
		return h, fmt.Errorf("hello is %d bytes, at most %d allowed", len(body), MaxHelloBytes)
	}
	if err := checkStrict(body, helloShape); err != nil {
		return h, err
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return h, fmt.Errorf("hello is not valid JSON: %w", err)
	}
	return h, h.Validate()
}

// DecodeWelcome decodes a server's welcome by the rule [DecodeHello]
// applies to a hello, in the other direction: members a newer server added
// are ignored, while a repeated key or a case variant of a welcome's member
// is refused, so that the version and fingerprint the client checks
// ([CheckWelcome]) are the only reading of the welcome. A welcome without a
// session is refused too (a dry run's welcome, whose session is "", is read
// with encoding/json by the tool that asked for it).
func DecodeWelcome(body []byte) (Welcome, error) {
	var w Welcome
	if err := checkStrict(body, welcomeShape); err != nil {
		return w, fmt.Errorf("welcome: %w", err)
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return w, fmt.Errorf("welcome is not valid JSON: %w", err)
	}
	if w.Session == "" {
		return w, errors.New("welcome has no session")
	}
	return w, nil
}

// MaxHelloBytes bounds a hello's encoded size. A hello of [MaxOffers]
// offers with names of [MaxNameBytes] is under 10 KiB; the bound keeps what
// an unauthenticated peer can make a server read and check cheap (a 1 MiB
// hello would cost tens of milliseconds of CPU to check).
const MaxHelloBytes = 64 << 10

// shape is what a strict check knows of the JSON value at one position:
// the members an object there has (each with the shape of its value), and
// the shape of an array's elements. A nil shape knows nothing: every member
// under it is unknown, and only checked for duplicates.
type shape struct {
	members map[string]*shape
	elem    *shape
}

// offerShape, helloShape, peerShape and welcomeShape are the members of an
// offer, a hello, a welcome's peer and a welcome, spelt as on the wire.
var (
	offerShape = &shape{members: map[string]*shape{"version": nil, "fingerprint": nil}}
	helloShape = &shape{members: map[string]*shape{
		"contract": nil, "component": nil, "instance": nil, "release": nil,
		"offers": {elem: offerShape}, "peerRelease": nil,
	}}
	peerShape    = &shape{members: map[string]*shape{"component": nil, "instance": nil, "release": nil}}
	welcomeShape = &shape{members: map[string]*shape{
		"session": nil, "version": nil, "fingerprint": nil, "peer": peerShape,
		"heartbeat": nil, "ttl": nil,
	}}
)

// maxStrictDepth bounds how deeply a strictly checked document may nest.
const maxStrictDepth = 32

// CheckStrictJSON checks a JSON document without decoding it into values:
// valid UTF-8, well-formed, no object repeating a key under encoding/json's
// case folding, at most 32 levels deep, and, when known is not nil, every
// object key that folds to one of known spelt exactly as known spells it.
// Other keys are allowed: an envelope that ignores the members it does not
// know still reads each one it knows one way only. It is for small
// envelopes an unauthenticated peer sends, not for large messages.
func CheckStrictJSON(body []byte, known map[string]bool) error {
	var s *shape
	if known != nil {
		s = &shape{members: map[string]*shape{}}
		s.elem = s
		for k := range known {
			s.members[k] = s
		}
	}
	return checkStrict(body, s)
}

func checkStrict(body []byte, s *shape) error {
	if !utf8.Valid(body) {
		return errors.New("body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := checkValue(dec, s, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("body has data after its JSON value")
	}
	return nil
}

func checkValue(dec *json.Decoder, s *shape, depth int) error {
	if depth > maxStrictDepth {
		return fmt.Errorf("body nests deeper than %d levels", maxStrictDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("body is not valid JSON: %w", err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '[':
		var elem *shape
		if s != nil {
			elem = s.elem
		}
		for dec.More() {
			if err := checkValue(dec, elem, depth+1); err != nil {
				return err
			}
		}
	case '{':
		var known map[string]string // folded name → name, of s's members
		if s != nil && len(s.members) > 0 {
			known = make(map[string]string, len(s.members))
			for name := range s.members {
				known[foldName(name)] = name
			}
		}
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return fmt.Errorf("body is not valid JSON: %w", err)
			}
			key, _ := tok.(string)
			folded := foldName(key)
			if seen[folded] {
				return fmt.Errorf("key %q appears twice in one object", key)
			}
			seen[folded] = true
			var sub *shape
			if name, ok := known[folded]; ok {
				if name != key {
					return fmt.Errorf("key %q is spelt %q", key, name)
				}
				sub = s.members[name]
			}
			if err := checkValue(dec, sub, depth+1); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return fmt.Errorf("body is not valid JSON: %w", err)
	}
	return nil
}

// foldName folds a member name as encoding/json does when it matches names
// to fields: two names fold equal exactly when bytes.EqualFold holds, so
// "Instance" and "inſtance" (U+017F) both fold to what "instance" does.
func foldName(name string) string {
	out := make([]rune, 0, len(name))
	for _, r := range name {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			out = append(out, r)
			continue
		}
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		out = append(out, r)
	}
	return string(out)
}
