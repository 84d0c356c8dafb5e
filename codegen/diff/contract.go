package diff

import (
	"errors"
	"fmt"

	"github.com/hashicorp/go-version"
	"github.com/lockstep-dev/lockstep/handshake"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Compare compares two versions of a contract and classifies every change
// by where each message is used (see [Direction]): method requests and
// topics the client writes flow client→server, method responses and topics
// the server writes flow server→client, and a message used both ways is
// checked both ways, once per use. It also reports methods and topics added
// or removed, changed flags, paths, keys, writers and lost-writer policies,
// and changed roles.
//
// Only messages that a method or topic uses are compiled and compared. An
// error means the contracts could not be compared: a version that does not
// parse, a method or topic naming a message the contract lacks, or a schema
// that is not valid JSON or fails meta-validation.
func Compare(oldContract, newContract *handshake.Contract) (*Report, error) {
	if oldContract == nil || newContract == nil {
		return nil, errors.New("diff: both contracts are required")
	}
	oldVersion, err := version.NewVersion(oldContract.Version)
	if err != nil {
		return nil, fmt.Errorf("diff: old contract %s: version %q: %w", oldContract.Name, oldContract.Version, err)
	}
	newVersion, err := version.NewVersion(newContract.Version)
	if err != nil {
		return nil, fmt.Errorf("diff: new contract %s: version %q: %w", newContract.Name, newContract.Version, err)
	}
	cmp := &contractComparison{
		report: &Report{
			Contract:    newContract.Name,
			OldVersion:  oldContract.Version,
			NewVersion:  newContract.Version,
			MajorBump:   newVersion.Segments()[0] > oldVersion.Segments()[0],
			SameVersion: newContract.Version == oldContract.Version,
			Changes:     []Change{},
		},
		old: &compiledContract{side: "old", contract: oldContract, address: oldDocument, schemas: map[string]*jsonschema.Schema{}},
		new: &compiledContract{side: "new", contract: newContract, address: newDocument, schemas: map[string]*jsonschema.Schema{}},
	}
	cmp.compareRoles()
	if err := cmp.compareMethods(); err != nil {
		return nil, err
	}
	if err := cmp.compareTopics(); err != nil {
		return nil, err
	}
	// After the comparison, whose errors name the message at fault.
	if cmp.report.OldFingerprint, err = handshake.Fingerprint(oldContract); err != nil {
		return nil, fmt.Errorf("diff: old contract %s: fingerprint: %w", oldContract.Name, err)
	}
	if cmp.report.NewFingerprint, err = handshake.Fingerprint(newContract); err != nil {
		return nil, fmt.Errorf("diff: new contract %s: fingerprint: %w", newContract.Name, err)
	}
	return cmp.report, nil
}

type contractComparison struct {
	report   *Report
	old, new *compiledContract
}

// compiledContract compiles a contract's messages on first use.
type compiledContract struct {
	side     string
	contract *handshake.Contract
	address  string
	schemas  map[string]*jsonschema.Schema
}

func (c *compiledContract) message(name, usedBy string) (*jsonschema.Schema, error) {
	if schema, ok := c.schemas[name]; ok {
		return schema, nil
	}
	raw, ok := c.contract.Schemas[name]
	if !ok {
		return nil, fmt.Errorf("diff: %s contract %s: %s names message %q, which the contract does not define",
			c.side, c.contract.Name, usedBy, name)
	}
	schema, err := compileSchema(raw, c.address, "")
	if err != nil {
		return nil, fmt.Errorf("diff: %s contract %s: message %q: %w", c.side, c.contract.Name, name, err)
	}
	c.schemas[name] = schema
	return schema, nil
}

// breaks says which order of peers a contract-level change breaks: an old
// client calling a new server (the order [Change.Breaking] is about), a new
// client calling an old server ([Change.BreaksNewClient]), both or neither.
type breaks uint8

const (
	breaksNone      breaks = 0
	breaksOldClient breaks = 1 << iota
	breaksNewClient
	breaksEither = breaksOldClient | breaksNewClient
)

func (cmp *contractComparison) add(where string, kind Kind, b breaks, format string, args ...any) {
	cmp.report.Changes = append(cmp.report.Changes, Change{
		Where: where, Kind: kind, Breaking: b&breaksOldClient != 0, BreaksNewClient: b&breaksNewClient != 0,
		Message: fmt.Sprintf(format, args...),
	})
}

func (cmp *contractComparison) compareRoles() {
	o, n := cmp.old.contract, cmp.new.contract
	if o.Name != n.Name {
		cmp.add("contract", KindContractRenamed, breaksEither,
			"contract renamed from %q to %q; peers of the two versions no longer find each other", o.Name, n.Name)
	}
	if o.Server != n.Server {
		cmp.add("contract", KindServerChanged, breaksEither,
			"server changed from %q to %q; old clients handshake with another component", o.Server, n.Server)
	}
	if o.Client != n.Client {
		cmp.add("contract", KindClientChanged, breaksEither,
			"client changed from %q to %q; the new server refuses old clients", o.Client, n.Client)
	}
}

func (cmp *contractComparison) compareMethods() error {
	o, n := cmp.old.contract, cmp.new.contract
	for _, name := range unionKeys(o.Methods, n.Methods) {
		oldMethod, inOld := o.Methods[name]
		newMethod, inNew := n.Methods[name]
		where := "method " + name
		switch {
		case !inNew:
			cmp.add(where, KindMethodRemoved, breaksOldClient, "method removed; old clients still call it")
			continue
		case !inOld:
			cmp.add(where, KindMethodAdded, breaksNone, "method added")
			continue
		}
		switch {
		case oldMethod.Idempotent && !newMethod.Idempotent:
			cmp.add(where, KindIdempotentRemoved, breaksOldClient, "method no longer idempotent; old clients still retry it after transport failures")
		case !oldMethod.Idempotent && newMethod.Idempotent:
			cmp.add(where, KindIdempotentAdded, breaksNewClient, "method now idempotent; new clients retry it after transport failures, which old servers do not expect")
		}
		if oldMethod.Batch != newMethod.Batch {
			cmp.add(where, KindBatchChanged, breaksEither, "batch changed from %t to %t; requests and responses change shape on the wire",
				oldMethod.Batch, newMethod.Batch)
		}
		if oldMethod.Path != newMethod.Path {
			cmp.add(where, KindPathChanged, breaksEither, "HTTP path changed from %s to %s; old peers use the old path",
				describePath(oldMethod.Path), describePath(newMethod.Path))
		}
		if err := cmp.compareMessage(where+" request", oldMethod.Request, newMethod.Request, Request); err != nil {
			return err
		}
		if err := cmp.compareMessage(where+" response", oldMethod.Response, newMethod.Response, Response); err != nil {
			return err
		}
	}
	return nil
}

func describePath(path string) string {
	if path == "" {
		return "the default"
	}
	return fmt.Sprintf("%q", path)
}

func (cmp *contractComparison) compareTopics() error {
	o, n := cmp.old.contract, cmp.new.contract
	for _, name := range unionKeys(o.Topics, n.Topics) {
		oldTopic, inOld := o.Topics[name]
		newTopic, inNew := n.Topics[name]
		where := "topic " + name
		switch {
		case !inNew:
			cmp.add(where, KindTopicRemoved, breaksOldClient, "topic removed; old peers still write or watch it")
			continue
		case !inOld:
			cmp.add(where, KindTopicAdded, breaksNone, "topic added")
			continue
		}
		if oldTopic.Key != newTopic.Key {
			cmp.add(where, KindTopicKeyChanged, breaksEither, "key field changed from %q to %q; the versions key objects differently",
				oldTopic.Key, newTopic.Key)
		}
		dir := writerDirection(newTopic.Writer)
		if oldTopic.Writer != newTopic.Writer {
			cmp.add(where, KindTopicWriterChanged, breaksEither, "writer changed from %q to %q; the old writer's peer rejects its writes",
				oldTopic.Writer, newTopic.Writer)
			dir = Both
		}
		if oldTopic.LostWriter != newTopic.LostWriter {
			cmp.add(where, KindLostWriterChanged, breaksEither,
				"lost-writer policy changed from %q to %q; old watchers see other objects after a writer is lost",
				oldTopic.LostWriter, newTopic.LostWriter)
		}
		for _, sel := range oldTopic.Selectors {
			if !newTopic.HasSelector(sel) {
				cmp.add(where, KindSelectorRemoved, breaksOldClient, "selector %q removed; old watchers that select on it are refused", sel)
			}
		}
		for _, sel := range newTopic.Selectors {
			if !oldTopic.HasSelector(sel) {
				cmp.add(where, KindSelectorAdded, breaksNewClient, "selector %q added; new watchers that select on it are refused by old servers", sel)
			}
		}
		if err := cmp.compareMessage(where+" object", oldTopic.Object, newTopic.Object, dir); err != nil {
			return err
		}
	}
	return nil
}

// writerDirection maps a topic's writer to the way its objects flow;
// anything but a known side is checked both ways.
func writerDirection(writer handshake.Role) Direction {
	switch writer {
	case handshake.RoleClient:
		return Request
	case handshake.RoleServer:
		return Response
	}
	return Both
}

// compareMessage compares the messages one use names in each version.
func (cmp *contractComparison) compareMessage(where, oldName, newName string, dir Direction) error {
	switch {
	case oldName == "" && newName == "":
		return nil
	case oldName == "":
		cmp.add(where, KindMessageAdded, breaksEither, "message %q added where there was none; old peers send or expect no body", newName)
		return nil
	case newName == "":
		cmp.add(where, KindMessageRemoved, breaksEither, "message %q removed; old peers still send or expect it", oldName)
		return nil
	}
	if oldName != newName {
		cmp.add(where, KindMessageRenamed, breaksNone, "message changed from %q to %q; the names are not on the wire, so only their contents count", oldName, newName)
	}
	oldSchema, err := cmp.old.message(oldName, where)
	if err != nil {
		return err
	}
	newSchema, err := cmp.new.message(newName, where)
	if err != nil {
		return err
	}
	for _, change := range compareCompiled(oldSchema, newSchema, "", dir, maxSteps) {
		change.Where = where
		cmp.report.Changes = append(cmp.report.Changes, change)
	}
	return nil
}
