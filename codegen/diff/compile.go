package diff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// The documents being compared are registered under these addresses. They
// never leave the process: every reference outside the document is refused.
const (
	oldDocument = "https://lockstep.invalid/old.json"
	newDocument = "https://lockstep.invalid/new.json"
)

// compileSchema compiles and meta-validates one self-contained schema
// document with the settings the generator uses (2020-12 unless the
// document's $schema says otherwise, format assertions on) and returns the
// subschema at pointer, a JSON pointer ("" for the whole document).
func compileSchema(doc json.RawMessage, address, pointer string) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, errors.New("schema is empty")
	}
	if !json.Valid(doc) {
		var probe any
		err := json.Unmarshal(doc, &probe)
		return nil, fmt.Errorf("schema is not valid JSON: %v", err)
	}
	fragment, err := pointerFragment(pointer)
	if err != nil {
		return nil, err
	}
	compiler := jsonschema.NewCompiler()
	compiler.Draft = jsonschema.Draft2020
	compiler.AssertFormat = true
	compiler.ExtractAnnotations = true
	compiler.LoadURL = func(target string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("reference to %s leaves the message; bundle it into the schema", target)
	}
	if err := compiler.AddResource(address, bytes.NewReader(doc)); err != nil {
		return nil, cleanCompileError(err, address)
	}
	schema, err := compiler.Compile(address + fragment)
	if err != nil {
		return nil, cleanCompileError(err, address)
	}
	return schema, nil
}

// cleanCompileError drops the internal document address from a compiler
// error so that the message speaks of the schema only.
func cleanCompileError(err error, address string) error {
	var schemaErr *jsonschema.SchemaError
	if errors.As(err, &schemaErr) && schemaErr.Err != nil {
		err = schemaErr.Err
	}
	text := strings.ReplaceAll(err.Error(), address, "")
	text = strings.TrimPrefix(text, "jsonschema: ")
	return fmt.Errorf("invalid schema: %s", text)
}

// pointerFragment turns a JSON pointer into the URI fragment the compiler
// resolves, percent-encoding each token.
func pointerFragment(pointer string) (string, error) {
	if pointer == "" {
		return "", nil
	}
	if !strings.HasPrefix(pointer, "/") {
		return "", fmt.Errorf("JSON pointer %q must be empty or start with /", pointer)
	}
	tokens := strings.Split(pointer[1:], "/")
	for i, token := range tokens {
		tokens[i] = url.PathEscape(token)
	}
	return "#/" + strings.Join(tokens, "/"), nil
}

// locationPointer returns the JSON pointer of a compiled schema within the
// document registered at address, or ok=false when the schema is not part
// of that document (a synthetic schema of this package).
func locationPointer(schema *jsonschema.Schema, address string) (pointer string, ok bool) {
	if schema == nil {
		return "", false
	}
	fragment, found := strings.CutPrefix(schema.Location, address+"#")
	if !found {
		return "", false
	}
	if unescaped, err := url.PathUnescape(fragment); err == nil {
		fragment = unescaped
	}
	return fragment, true
}

// joinPointer appends tokens to a JSON pointer, escaping each.
func joinPointer(pointer string, tokens ...string) string {
	var b strings.Builder
	b.WriteString(pointer)
	for _, token := range tokens {
		b.WriteByte('/')
		token = strings.ReplaceAll(token, "~", "~0")
		b.WriteString(strings.ReplaceAll(token, "/", "~1"))
	}
	return b.String()
}
