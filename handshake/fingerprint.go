package handshake

import "errors"

// FingerprintPrefix names the canonicalisation algorithm. A change to the
// canonical form gets a new prefix, never a silent change of hashes.
const FingerprintPrefix = "lsfp1:"

// Fingerprint returns "lsfp1:" + hex SHA-256 of the contract's canonical
// form (see [Canonical]).
func Fingerprint(c *Contract) (string, error) {
	return "", errors.New("handshake: fingerprint not yet available")
}
