package handshake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// DecodeHello decodes the body of a handshake strictly, as an untrusted
// peer's input must be: the body must be valid UTF-8, no object in it may
// repeat a key (encoding/json matches keys case-insensitively and lets the
// last duplicate win, so {"component":"kubelet","Component":"scheduler"}
// would be read as whichever came last), every key must be spelt exactly as
// the wire names it, and nothing may follow the hello. The decoded hello is
// then checked with [Hello.Validate]. A body over [MaxHelloBytes] is
// refused before it is looked at.
func DecodeHello(body []byte) (Hello, error) {
	var h Hello
	if len(body) > MaxHelloBytes {
		return h, fmt.Errorf("hello is %d bytes, at most %d allowed", len(body), MaxHelloBytes)
	}
	if err := CheckStrictJSON(body, helloKeys); err != nil {
		return h, err
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return h, fmt.Errorf("hello is not valid JSON: %w", err)
	}
	return h, h.Validate()
}

// MaxHelloBytes bounds a hello's encoded size. A hello of [MaxOffers]
// offers with names of [MaxNameBytes] is under 10 KiB; the bound keeps what
// an unauthenticated peer can make a server read and check cheap (a 1 MiB
// hello would cost tens of milliseconds of CPU to check).
const MaxHelloBytes = 64 << 10

// helloKeys are the keys a hello and its offers may carry, spelt as on the
// wire.
var helloKeys = map[string]bool{
	"contract": true, "component": true, "instance": true, "release": true,
	"offers": true, "peerRelease": true, "version": true, "fingerprint": true,
}

// maxStrictDepth bounds how deeply a strictly checked document may nest.
const maxStrictDepth = 32

// CheckStrictJSON checks a JSON document without decoding it into values:
// valid UTF-8, well-formed, no object repeating a key under case folding,
// at most 32 levels deep, and, when known is not nil, every object key one
// of known, spelt exactly. It is for small envelopes an unauthenticated peer
// sends (a hello), not for large messages.
func CheckStrictJSON(body []byte, known map[string]bool) error {
	if !utf8.Valid(body) {
		return errors.New("body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := checkValue(dec, known, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("body has data after its JSON value")
	}
	return nil
}

func checkValue(dec *json.Decoder, known map[string]bool, depth int) error {
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
		for dec.More() {
			if err := checkValue(dec, known, depth+1); err != nil {
				return err
			}
		}
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return fmt.Errorf("body is not valid JSON: %w", err)
			}
			key, _ := tok.(string)
			folded := strings.ToLower(key)
			if seen[folded] {
				return fmt.Errorf("key %q appears twice in one object", key)
			}
			seen[folded] = true
			if known != nil && !known[key] {
				return fmt.Errorf("unknown key %q", key)
			}
			if err := checkValue(dec, known, depth+1); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return fmt.Errorf("body is not valid JSON: %w", err)
	}
	return nil
}
