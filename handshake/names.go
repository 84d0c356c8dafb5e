package handshake

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxNameBytes bounds every name a peer sends: contract, component,
// instance, release, and an identity's parts. 253 bytes is the longest DNS
// name, and so the longest Kubernetes object name a node or pod name can be;
// a bound keeps what a server stores (and lists on its status page) per
// session small.
const MaxNameBytes = 253

// ErrNameTooLong and ErrTooManyOffers are what the errors of a hello over
// [MaxNameBytes] or [MaxOffers] match with errors.Is (the message stays
// the specific one), so that a server can count which bound a peer went
// over.
var (
	ErrNameTooLong   = errors.New("name over MaxNameBytes")
	ErrTooManyOffers = errors.New("offers over MaxOffers")
)

// overBound is an error over one of a hello's bounds: its message, and
// errors.Is matching the bound's sentinel.
type overBound struct {
	msg   string
	bound error
}

func (e *overBound) Error() string        { return e.msg }
func (e *overBound) Is(target error) bool { return target == e.bound }

func tooLong(what string, n int) error {
	return &overBound{fmt.Sprintf("%s is %d bytes long, at most %d allowed", what, n, MaxNameBytes), ErrNameTooLong}
}

// CheckName checks one name a peer sent: not empty, at most [MaxNameBytes]
// bytes, valid UTF-8 (encoding/json would otherwise fold invalid bytes to
// U+FFFD, so two distinct names would collide), and no control or format
// characters (which could forge log lines or hide in status pages). what
// names the field, for the error.
func CheckName(what, name string) error {
	if name == "" {
		return fmt.Errorf("%s is required", what)
	}
	if len(name) > MaxNameBytes {
		return tooLong(what, len(name))
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
			return fmt.Errorf("%s contains the control character %U", what, r)
		}
	}
	return nil
}
