package framework

import (
	"fmt"
	"sort"

	"github.com/hashicorp/go-version"

	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/internal/model"
	"github.com/lockstep-dev/lockstep/framework/internal/schema"
)

// Contract is one version of a contract, ready for the runtime: the model,
// its fingerprint, and its message schemas compiled for validation. Build it
// with [NewContract]; generated packages build theirs once, at init, with
// [MustContract].
type Contract struct {
	model       handshake.Contract
	fingerprint string
	version     *version.Version
	schemas     map[string]*schema.Message
	// derivesFrom is the compatible version this one derives from, with
	// the conversions ([NewCompatibleContract]); nil for most contracts.
	derivesFrom *Compatible
}

// NewContract checks a contract model and compiles its schemas with
// jsonschema/v5 (format assertions on; see framework/internal/schema).
// The model is copied.
func NewContract(m handshake.Contract) (*Contract, error) {
	m.Topics = model.CloneTopics(m.Topics)
	if err := model.Check(&m); err != nil {
		return nil, fmt.Errorf("lockstep: contract %s %s: %w", m.Name, m.Version, err)
	}
	v, err := version.NewVersion(m.Version)
	if err != nil {
		return nil, fmt.Errorf("lockstep: contract %s: version %q: %w", m.Name, m.Version, err)
	}
	fp, err := handshake.Fingerprint(&m)
	if err != nil {
		return nil, fmt.Errorf("lockstep: contract %s %s: fingerprint: %w", m.Name, m.Version, err)
	}
	c := &Contract{model: m, fingerprint: fp, version: v, schemas: make(map[string]*schema.Message, len(m.Schemas))}
	for _, name := range sortedKeys(m.Schemas) {
		s, err := schema.Compile(m.Name, m.Version, name, m.Schemas[name])
		if err != nil {
			return nil, err
		}
		c.schemas[name] = s
	}
	return c, nil
}

// MustContract is [NewContract] for generated code and package-level
// variables: a contract that does not compile is a build mistake, so it
// panics.
func MustContract(m handshake.Contract) *Contract {
	c, err := NewContract(m)
	if err != nil {
		panic(err)
	}
	return c
}

// Name returns the contract's name.
func (c *Contract) Name() string { return c.model.Name }

// Version returns the contract's version as written in the contract file.
func (c *Contract) Version() string { return c.model.Version }

// Fingerprint returns the contract's fingerprint.
func (c *Contract) Fingerprint() string { return c.fingerprint }

// Server returns the name of the component that serves the contract.
func (c *Contract) Server() string { return c.model.Server }

// Client returns the name of the component that calls the contract.
func (c *Contract) Client() string { return c.model.Client }

// Offer returns the (version, fingerprint) this contract puts in an offer.
func (c *Contract) Offer() handshake.Offer {
	return handshake.Offer{Version: c.model.Version, Fingerprint: c.fingerprint}
}

// Model returns a copy of the contract's model.
func (c *Contract) Model() handshake.Contract {
	return model.Clone(c.model)
}

// Method returns a method's declaration.
func (c *Contract) Method(name string) (handshake.Method, bool) {
	m, ok := c.model.Methods[name]
	return m, ok
}

// Methods returns the names of the contract's methods, sorted.
func (c *Contract) Methods() []string { return sortedKeys(c.model.Methods) }

// Topic returns a topic's declaration: its object message, key field,
// writer side and lost-writer policy.
func (c *Contract) Topic(name string) (handshake.Topic, bool) {
	t, ok := c.model.Topics[name]
	return t, ok
}

// Topics returns the names of the contract's topics, sorted.
func (c *Contract) Topics() []string { return sortedKeys(c.model.Topics) }

// ValidateJSON validates raw JSON against the named message schema with
// jsonschema/v5. The error, if any, is invalid_argument with the violations
// as details; a message holding a number the validator cannot read
// safely is refused before it ([ErrNumberOutOfRange]).
func (c *Contract) ValidateJSON(message string, raw []byte) error {
	_, err := c.validateJSON(message, raw)
	return err
}

// validateJSON is ValidateJSON, returning the message as the validator
// saw it.
func (c *Contract) validateJSON(message string, raw []byte) (any, error) {
	s, ok := c.schemas[message]
	if !ok {
		return nil, Errorf(CodeInternal, "contract %s %s has no message %q", c.model.Name, c.model.Version, message)
	}
	return s.Validate(raw)
}

// decodeValidated decodes raw into v and validates it against the named
// message schema (see [schema.Message.DecodeValidated]).
func (c *Contract) decodeValidated(message string, raw []byte, v any) error {
	s, ok := c.schemas[message]
	if !ok {
		return Errorf(CodeInternal, "contract %s %s has no message %q", c.model.Name, c.model.Version, message)
	}
	return s.DecodeValidated(raw, v)
}

// ErrNumberOutOfRange is the cause (errors.Is finds it) of the
// invalid_argument [Contract.ValidateJSON] returns for a message holding
// a number over 256 bytes or with an exponent beyond ±1000, wherever it
// stands. Generated decoders refuse such a number where the schema types
// it (no Go type holds it) and keep it as it is where the schema says
// nothing of it.
var ErrNumberOutOfRange = schema.ErrNumberOutOfRange

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
