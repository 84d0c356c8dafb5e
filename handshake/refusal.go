package handshake

import "fmt"

// Reason says why a handshake was refused.
type Reason string

// Every reason a handshake can be refused for.
const (
	// ReasonVersionMismatch: the two offers share no version.
	ReasonVersionMismatch Reason = "version_mismatch"
	// ReasonFingerprintMismatch: a version is shared, but its fingerprints
	// differ: someone changed the messages without bumping the version.
	ReasonFingerprintMismatch Reason = "fingerprint_mismatch"
	// ReasonRoleMismatch: the caller is not the contract's client component.
	ReasonRoleMismatch Reason = "role_mismatch"
	// ReasonReleaseConstraint: a side's release does not satisfy the other
	// side's constraint on its peer.
	ReasonReleaseConstraint Reason = "release_constraint"
	// ReasonDraining: the server is shutting down and takes no new sessions.
	ReasonDraining Reason = "draining"
)

// Code is the error code a refusal travels under. It matches the
// framework's error codes.
type Code string

// Codes a refusal can carry.
const (
	CodeIncompatiblePeer Code = "incompatible_peer"
	CodePermissionDenied Code = "permission_denied"
	CodeInvalidArgument  Code = "invalid_argument"
	CodeNotFound         Code = "not_found"
)

// SideInfo describes one side of a refused handshake, so the refusal tells
// a person what each side runs.
type SideInfo struct {
	// Component is the side's component name.
	Component string `json:"component"`
	// Release is the side's binary version, when known.
	Release string `json:"release,omitempty"`
	// Offers is what the side can speak.
	Offers []Offer `json:"offers"`
}

// Refusal is a handshake that did not produce an agreement. It travels as the
// details of a coded error (HTTP 409 for incompatible_peer, 403 for
// permission_denied).
type Refusal struct {
	// Code is the error code: incompatible_peer, or permission_denied for
	// a role mismatch.
	Code Code `json:"code"`
	// Reason says which rule refused.
	Reason Reason `json:"reason"`
	// Contract is the contract's name.
	Contract string `json:"contract"`
	// Server and Client describe both sides' offers.
	Server SideInfo `json:"server"`
	Client SideInfo `json:"client"`
	// Message is a sentence a person can act on.
	Message string `json:"message"`
}

// Error makes a refusal usable as an error.
func (r *Refusal) Error() string {
	return fmt.Sprintf("handshake refused (%s): %s", r.Reason, r.Message)
}
