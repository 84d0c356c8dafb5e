package jsonwire

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// MaxDepth bounds how deeply a [Decoder] lets objects and arrays nest, as
// encoding/json does, so hostile input cannot exhaust the stack.
const MaxDepth = 10000

// ErrUnrepresentable marks a [DecodeError] for a JSON value that its schema
// accepts but the Go type cannot hold: an integer beyond the range of its Go
// integer type (int64 unless the schema's format says otherwise), or a
// number beyond float64. Such messages are refused whether or not they are
// validated first, since they do not decode.
var ErrUnrepresentable = errors.New("the value does not fit its Go type")

// ErrExternal marks a [DecodeError] from a type named by x-go-type, which
// decodes by its own rules: the contract chose that type, and with it that
// some values its schema accepts (a string that is no IP address for a
// netip.Addr, say) do not decode.
var ErrExternal = errors.New("the value does not decode into its x-go-type")

// External wraps the error of decoding into an x-go-type.
func External(err error) error {
	return &DecodeError{Keyword: "x-go-type", Message: err.Error(), external: true}
}

// DecodeError is a JSON value that does not fit the Go type it is decoded
// into: malformed JSON, a value of the wrong JSON type, or a member the
// type has no place for. Generated decoders reject exactly what their Go
// types cannot represent; everything else their schema says is checked by
// the generated Validate methods.
type DecodeError struct {
	// Path holds the reference tokens of the JSON pointer to the value,
	// outermost first.
	Path []string
	// Keyword is the JSON Schema keyword the value violates ("type",
	// "required", "additionalProperties", "items", "minItems"), or ""
	// for malformed JSON.
	Keyword string
	// Message says what is wrong.
	Message string
	// Offset is the byte offset in the decoded data where it went wrong.
	Offset int

	unrepresentable bool
	external        bool
}

// Pointer returns the JSON pointer (RFC 6901) to the value.
func (e *DecodeError) Pointer() string {
	var b strings.Builder
	for _, tok := range e.Path {
		b.WriteByte('/')
		b.WriteString(escapeToken(tok))
	}
	return b.String()
}

// Error implements error: the pointer, then the message.
func (e *DecodeError) Error() string {
	p := e.Pointer()
	if p == "" {
		p = "/"
	}
	return p + ": " + e.Message
}

// Is makes errors.Is(err, [ErrUnrepresentable]) true for values the Go type
// cannot hold, and errors.Is(err, [ErrExternal]) for values an x-go-type
// refused.
func (e *DecodeError) Is(target error) bool {
	return target == ErrUnrepresentable && e.unrepresentable || target == ErrExternal && e.external
}

// Within puts err at member name of the value being decoded: generated
// decoders call it as an error unwinds, so the error's pointer grows only
// when something failed.
func Within(err error, name string) error {
	var de *DecodeError
	if errors.As(err, &de) {
		de.Path = append([]string{name}, de.Path...)
		return de
	}
	return &DecodeError{Path: []string{name}, Message: err.Error()}
}

// WithinIndex is [Within] for an array element.
func WithinIndex(err error, i int) error { return Within(err, strconv.Itoa(i)) }

// Missing is the error of an object that lacks required members.
func Missing(d *Decoder, names ...string) error {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return &DecodeError{Keyword: "required", Message: "missing properties: " + strings.Join(q, ", "), Offset: d.pos}
}

// Undeclared is the error of a member that a closed object does not
// declare.
func Undeclared(d *Decoder, name []byte) error {
	return &DecodeError{Keyword: "additionalProperties", Message: fmt.Sprintf("additionalProperties %q not allowed", name), Offset: d.pos}
}

// Decoder reads JSON from a byte slice for generated decoders: one value
// at a time, checking the syntax as it goes, without building anything the
// generated code does not ask for. Its zero value is not usable; use
// [NewDecoder].
type Decoder struct {
	data  []byte
	pos   int
	depth int
	err   error
	// opened is true right after '{' or '[': the next member or element
	// needs no comma.
	opened  bool
	scratch []byte
	// text is the input copied once into a string, made when the first
	// string is read: strings without escapes are slices of it, so that a
	// message's strings cost one allocation, not one each. They keep the
	// whole input alive while any of them is; inputs above maxShared bytes
	// are not shared, so a small string kept never holds a large message.
	// A shared decoder's text is the input itself ([NewSharedDecoder]).
	text   string
	shared bool
}

// maxShared bounds the inputs whose strings share one copy.
const maxShared = 64 << 10

// NewDecoder returns a decoder of data.
func NewDecoder(data []byte) Decoder { return Decoder{data: data} }

// NewSharedDecoder returns a decoder of data whose strings are slices of
// data itself, not of a copy: decoding costs no copy of the input, and
// the values decoded keep data alive while any of their strings is. It is
// for inputs that nothing ever writes again, such as the watch frames an
// informer's feed reads into buffers of their own and shares, immutable,
// between informers: if data changed, strings would change under their
// holders. Strings with escapes are copied as with [NewDecoder].
func NewSharedDecoder(data []byte) Decoder {
	d := Decoder{data: data, shared: true}
	if len(data) > 0 {
		d.text = unsafe.String(&data[0], len(data))
	}
	return d
}

// SharedUnmarshaler is implemented by the generated message types:
// UnmarshalSharedJSON decodes as UnmarshalJSON does, with a decoder from
// [NewSharedDecoder], so the caller promises never to modify data while
// the value lives.
type SharedUnmarshaler interface {
	UnmarshalSharedJSON(data []byte) error
}

// Err returns the error that ended an object or array loop, if any.
func (d *Decoder) Err() error { return d.err }

// End checks that nothing but white space follows the value read.
func (d *Decoder) End() error {
	if d.err != nil {
		return d.err
	}
	d.skipSpace()
	if d.pos < len(d.data) {
		return d.syntax("invalid character %s after top-level value", quoteChar(d.data[d.pos]))
	}
	return nil
}

// skipSpace moves past white space. Its first test is small enough to be
// inlined into every caller: compact JSON, which the runtime writes, has
// no white space between tokens, so most calls end there.
func (d *Decoder) skipSpace() {
	if d.pos < len(d.data) && d.data[d.pos] > ' ' {
		return
	}
	d.skipSpaceLoop()
}

func (d *Decoder) skipSpaceLoop() {
	data, pos := d.data, d.pos
	for pos < len(data) {
		switch data[pos] {
		case ' ', '\t', '\n', '\r':
			pos++
		default:
			d.pos = pos
			return
		}
	}
	d.pos = pos
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := strconv.Quote(string(c))
	return "'" + s[1:len(s)-1] + "'"
}

func (d *Decoder) syntax(format string, args ...any) *DecodeError {
	return &DecodeError{Message: fmt.Sprintf(format, args...), Offset: d.pos}
}

func (d *Decoder) eof() *DecodeError {
	return &DecodeError{Message: "unexpected end of JSON input", Offset: d.pos}
}

// Kind is the JSON type of a value, as JSON Schema's "type" keyword names
// it; numbers are "integer" when their value is integral.
type Kind uint8

// The JSON types.
const (
	KindInvalid Kind = iota
	KindNull
	KindBoolean
	KindNumber
	KindInteger
	KindString
	KindArray
	KindObject
)

// String returns the name "type" uses.
func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindBoolean:
		return "boolean"
	case KindNumber:
		return "number"
	case KindInteger:
		return "integer"
	case KindString:
		return "string"
	case KindArray:
		return "array"
	case KindObject:
		return "object"
	}
	return "invalid"
}

// Peek returns the JSON type of the next value without reading it
// (KindNumber for every number).
func (d *Decoder) Peek() Kind {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return KindInvalid
	}
	return kindOfByte(d.data[d.pos])
}

func kindOfByte(c byte) Kind {
	switch {
	case c == '{':
		return KindObject
	case c == '[':
		return KindArray
	case c == '"':
		return KindString
	case c == 't' || c == 'f':
		return KindBoolean
	case c == 'n':
		return KindNull
	case c == '-' || c >= '0' && c <= '9':
		return KindNumber
	}
	return KindInvalid
}

// typeError reports a value of another JSON type than want, after checking
// that it is at least well-formed.
func (d *Decoder) typeError(want string) error {
	start := d.pos
	k := d.Peek()
	if k == KindInvalid {
		if d.pos >= len(d.data) {
			return d.eof()
		}
		return d.syntax("invalid character %s looking for beginning of value", quoteChar(d.data[d.pos]))
	}
	got := k.String()
	if k == KindNumber {
		text, err := d.number()
		if err != nil {
			return err
		}
		if integral(text) {
			got = "integer"
		}
	} else if err := d.Skip(); err != nil {
		return err
	}
	return &DecodeError{Keyword: "type", Message: "expected " + want + ", but got " + got, Offset: start}
}

// Null reads a JSON null if one comes next and reports whether it did.
// Its first test, inlined into the generated decoders, answers for
// compact JSON whose next value is not null, the common case.
func (d *Decoder) Null() bool {
	if d.pos < len(d.data) && !nullOrSpace[d.data[d.pos]] {
		return false
	}
	return d.null()
}

// nullOrSpace marks the bytes that may come before a null: its 'n' and
// white space.
var nullOrSpace = [256]bool{'n': true, ' ': true, '\t': true, '\n': true, '\r': true}

func (d *Decoder) null() bool {
	d.skipSpace()
	if d.pos+4 <= len(d.data) && string(d.data[d.pos:d.pos+4]) == "null" {
		d.pos += 4
		d.opened = false
		return true
	}
	return false
}

// ObjectStart reads the '{' of an object; anything else is an error naming
// what came instead.
func (d *Decoder) ObjectStart() error {
	d.skipSpace()
	if d.pos >= len(d.data) || d.data[d.pos] != '{' {
		return d.typeError("object")
	}
	if d.depth++; d.depth > MaxDepth {
		return d.syntax("exceeded max depth")
	}
	d.pos++
	d.opened = true
	return nil
}

// NextMember moves to the next member of an object begun with
// [Decoder.ObjectStart], reading its name with [Decoder.Key]. It returns
// false after the closing '}', or on malformed JSON ([Decoder.Err]).
func (d *Decoder) NextMember() bool {
	if d.compactComma() {
		return true
	}
	if d.err != nil {
		return false
	}
	d.skipSpace()
	if d.pos >= len(d.data) {
		d.err = d.eof()
		return false
	}
	c := d.data[d.pos]
	if c == '}' {
		d.pos++
		d.depth--
		d.opened = false
		return false
	}
	if !d.opened {
		if c != ',' {
			d.err = d.syntax("invalid character %s after object key:value pair", quoteChar(c))
			return false
		}
		d.pos++
		d.skipSpace()
	}
	d.opened = false
	return true
}

// Key reads a member name and the ':' after it. The bytes are valid until
// the next call on d; string(key) copies them.
func (d *Decoder) Key() []byte {
	if d.err != nil {
		return nil
	}
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		if d.pos >= len(d.data) {
			d.err = d.eof()
		} else {
			d.err = d.syntax("invalid character %s looking for beginning of object key string", quoteChar(d.data[d.pos]))
		}
		return nil
	}
	key, err := d.stringBytes()
	if err != nil {
		d.err = err
		return nil
	}
	d.skipSpace()
	if d.pos >= len(d.data) || d.data[d.pos] != ':' {
		if d.pos >= len(d.data) {
			d.err = d.eof()
		} else {
			d.err = d.syntax("invalid character %s after object key", quoteChar(d.data[d.pos]))
		}
		return nil
	}
	d.pos++
	return key
}

// Ahead returns the next n bytes of the input without reading them, ""
// when fewer remain. Generated decoders compare it with the member they
// expect next as compact JSON writes it after the member before,
// `,"name":` (`"name":` for an object's first member), and read it with
// [Decoder.Member] (or [Decoder.FirstMember]) when it matches, before
// moving on with [Decoder.NextMember] and [Decoder.Key] otherwise: for
// data written in declaration order, a member costs one comparison, and
// no name is scanned or matched. Compared in the generated code with a
// constant, names of up to 13 bytes take at most two loads, not a call. A
// name written with escapes or white space does not match; Key then reads
// it.
func (d *Decoder) Ahead(n int) string {
	if len(d.data)-d.pos < n || n <= 0 {
		return ""
	}
	return unsafe.String(&d.data[d.pos], n)
}

// Member reads the n bytes of a comma and member name that [Decoder.Ahead]
// returned, and reports whether it did: not after the '{' of an object,
// which no comma follows.
func (d *Decoder) Member(n int) bool {
	if d.opened || d.err != nil {
		return false
	}
	d.pos += n
	return true
}

// FirstMember reads the n bytes of an object's first member name that
// [Decoder.Ahead] returned, and reports whether it did: only right after
// the object's '{'.
func (d *Decoder) FirstMember(n int) bool {
	if !d.opened || d.err != nil {
		return false
	}
	d.pos += n
	d.opened = false
	return true
}

// compactComma reads a comma straight after a value with no white space
// after it, as compact JSON writes them, in one test, and reports whether
// it did; NextMember and NextItem take the general path otherwise. It is
// small enough to be inlined into both.
func (d *Decoder) compactComma() bool {
	if rest := d.data[d.pos:]; len(rest) > 1 && rest[0] == ',' && rest[1] > ' ' && !d.opened && d.err == nil {
		d.pos++
		return true
	}
	return false
}

// ArrayStart reads the '[' of an array; anything else is an error naming
// what came instead.
func (d *Decoder) ArrayStart() error {
	d.skipSpace()
	if d.pos >= len(d.data) || d.data[d.pos] != '[' {
		return d.typeError("array")
	}
	if d.depth++; d.depth > MaxDepth {
		return d.syntax("exceeded max depth")
	}
	d.pos++
	d.opened = true
	return nil
}

// NextItem moves to the next element of an array begun with
// [Decoder.ArrayStart]. It returns false after the closing ']', or on
// malformed JSON ([Decoder.Err]).
func (d *Decoder) NextItem() bool {
	if d.compactComma() {
		return true
	}
	if d.err != nil {
		return false
	}
	d.skipSpace()
	if d.pos >= len(d.data) {
		d.err = d.eof()
		return false
	}
	c := d.data[d.pos]
	if c == ']' {
		d.pos++
		d.depth--
		d.opened = false
		return false
	}
	if !d.opened {
		if c != ',' {
			d.err = d.syntax("invalid character %s after array element", quoteChar(c))
			return false
		}
		d.pos++
		d.skipSpace()
	}
	d.opened = false
	return true
}

// StringBytes reads a JSON string without copying it: the bytes are valid
// until the next call on d. Generated decoders of enums use it to find the
// constant a value names without allocating.
func (d *Decoder) StringBytes() ([]byte, error) {
	if start := d.pos; start < len(d.data) && d.data[start] == '"' {
		if end, flags := scanString(d.data, start+1); flags == 0 {
			d.pos = end + 1
			d.opened = false
			return d.data[start+1 : end], nil
		}
	}
	d.skipSpace()
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return nil, d.typeError("string")
	}
	return d.stringBytes()
}

// String reads a JSON string. Strings in one message are mostly short,
// so what it does around the scan counts as much as the scan: the common
// case (compact JSON, a string without escapes, ASCII, not empty, sliced
// from the message's text) is one call and one test.
func (d *Decoder) String() (string, error) {
	if start := d.pos; start < len(d.data) && d.data[start] == '"' && d.text != "" {
		if end, flags := scanString(d.data, start+1); flags == 0 && end > start+1 {
			d.pos = end + 1
			d.opened = false
			return d.text[start+1 : end], nil
		}
	}
	return d.stringAfterSpace()
}

func (d *Decoder) stringAfterSpace() (string, error) {
	d.skipSpace()
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return "", d.typeError("string")
	}
	return d.readString()
}

// readString reads the string at '"'.
func (d *Decoder) readString() (string, error) {
	start := d.pos
	end, flags := scanString(d.data, start+1)
	if flags&^stringNonASCII != 0 || flags != 0 && !utf8.Valid(d.data[start+1:end]) {
		b, err := d.slowString(start, end, flags)
		return string(b), err // escaped or invalid: unescaped into scratch
	}
	d.pos = end + 1
	d.opened = false
	if end == start+1 || !d.shared && len(d.data) > maxShared {
		return string(d.data[start+1 : end]), nil // empty, or large input
	}
	if d.text == "" {
		d.text = string(d.data) // the first string of the message
	}
	return d.text[start+1 : end], nil
}

// KeyString is [Decoder.Key] returning a string, for maps: a slice of the
// shared copy of the input where it can be.
func (d *Decoder) KeyString() string {
	if d.err != nil {
		return ""
	}
	// Compact JSON: a name without escapes, sliced from the message's
	// text, and its ':' straight after it.
	if start := d.pos; start < len(d.data) && d.data[start] == '"' && d.text != "" {
		if end, flags := scanString(d.data, start+1); flags == 0 && end > start+1 && end+1 < len(d.data) && d.data[end+1] == ':' {
			d.pos = end + 2
			d.opened = false
			return d.text[start+1 : end]
		}
	}
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		d.Key() // records the error
		return ""
	}
	start := d.pos
	s, err := d.readString()
	if err != nil {
		d.err = err
		return ""
	}
	d.skipSpace()
	if d.pos >= len(d.data) || d.data[d.pos] != ':' {
		d.pos = start
		d.Key() // records the error
		return ""
	}
	d.pos++
	return s
}

// stringBytes reads a string at '"', returning its unescaped bytes (a
// subslice of the input, or of the scratch buffer when it had escapes or
// invalid UTF-8). Escapes and invalid UTF-8 are decoded by encoding/json,
// so the result is exactly what encoding/json (and thus jsonschema/v5)
// sees.
func (d *Decoder) stringBytes() ([]byte, error) {
	start := d.pos
	end, flags := scanString(d.data, start+1)
	if flags == 0 || flags == stringNonASCII && utf8.Valid(d.data[start+1:end]) {
		d.pos = end + 1
		d.opened = false
		return d.data[start+1 : end], nil
	}
	return d.slowString(start, end, flags)
}

// What scanString met in a string besides plain bytes.
const (
	stringEscaped  = 1 << iota // a backslash: the body needs unescaping
	stringNonASCII             // bytes >= 0x80: the body needs a UTF-8 check
	stringControl              // a control character, which ends the scan: a syntax error
	stringEOF                  // the input ended before the closing quote
)

// scanString finds the closing quote of the string whose body starts at
// data[i]: end is its index, and flags says what else the body holds.
// With stringControl, end is the control character's index; with
// stringEOF, the input's length. Most bytes of most strings need no
// attention: it skips them eight at a time while eight remain, then one
// at a time, and returns from the one test of the byte found when it is
// the closing quote, the common case. It is the one string scan that
// Key, String, StringBytes and Skip share.
func scanString(data []byte, i int) (end int, flags uint8) {
	for {
		for i+8 <= len(data) {
			m := specialBytes(binary.LittleEndian.Uint64(data[i:]))
			if m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto special
			}
			i += 8
		}
		for i < len(data) && plainByte[data[i]] {
			i++
		}
		if i >= len(data) {
			return len(data), flags | stringEOF
		}
	special:
		switch c := data[i]; {
		case c == '"':
			return i, flags
		case c == '\\':
			i += 2 // the escaped character cannot end the string
			flags |= stringEscaped
		case c < 0x20:
			return i, flags | stringControl
		default: // c >= 0x80
			flags |= stringNonASCII
			i++
		}
	}
}

// Constants of the eight-bytes-at-a-time scan of strings.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// specialBytes marks, in the high bit of each byte of w, the bytes of
// eight string bytes (read little-endian) that are not [plainByte]s: '"',
// '\\', control characters and non-ASCII bytes. Only its lowest mark is
// exact (a subtraction's borrow may mark bytes above the first true mark),
// which is all the scan needs: the position of the first such byte.
func specialBytes(w uint64) uint64 {
	quote := w ^ ('"' * ones)
	backslash := w ^ ('\\' * ones)
	// A byte >= 0x80 is marked by w itself, so the subtractions need no
	// mask against the false marks such bytes would give them.
	return ((w - 0x20*ones) | (quote - ones) | (backslash - ones) | w) & highs
}

// plainByte marks the bytes a string may hold as they are: printable
// ASCII other than '"' and '\\'.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// slowString reads the string at data[start] that scanString found to
// end at end with flags: it reports a control character or the end of
// the input, and otherwise decodes the escapes and invalid UTF-8 with
// encoding/json into the scratch buffer.
func (d *Decoder) slowString(start, end int, flags uint8) ([]byte, error) {
	switch {
	case flags&stringEOF != 0:
		d.pos = len(d.data)
		return nil, d.eof()
	case flags&stringControl != 0:
		d.pos = end
		return nil, d.syntax("invalid character %s in string literal", quoteChar(d.data[end]))
	}
	d.pos = end + 1
	d.opened = false
	var s string
	if err := json.Unmarshal(d.data[start:end+1], &s); err != nil {
		d.pos = start
		return nil, d.syntax("invalid string literal: %v", err)
	}
	d.scratch = append(d.scratch[:0], s...)
	return d.scratch, nil
}

// Bool reads true or false.
func (d *Decoder) Bool() (bool, error) {
	d.skipSpace()
	if d.pos < len(d.data) && (d.data[d.pos] == 't' || d.data[d.pos] == 'f') {
		if err := d.literal(); err != nil {
			return false, err
		}
		return d.data[d.pos-1] == 'e' && d.data[d.pos-2] == 'u', nil
	}
	return false, d.typeError("boolean")
}

// literal reads true, false or null, whichever the next byte starts.
func (d *Decoder) literal() error {
	var word string
	switch d.data[d.pos] {
	case 't':
		word = "true"
	case 'f':
		word = "false"
	default:
		word = "null"
	}
	for i := 0; i < len(word); i++ {
		if d.pos+i >= len(d.data) {
			d.pos += i
			return d.eof()
		}
		if d.data[d.pos+i] != word[i] {
			d.pos += i
			return d.syntax("invalid character %s in literal %s (expecting %s)", quoteChar(d.data[d.pos]), word, quoteChar(word[i]))
		}
	}
	d.pos += len(word)
	d.opened = false
	return nil
}

// number reads the text of a JSON number, checking its grammar.
func (d *Decoder) number() (string, error) {
	d.skipSpace()
	start := d.pos
	end, err := d.scanNumber()
	if err != nil {
		return "", err
	}
	return string(d.data[start:end]), nil
}

// scanNumber reads a JSON number, checking its grammar, and returns where
// its text ends; it copies nothing, so that skipping a number (Skip,
// RawBytes) costs no allocation, as a frame's seq and rev do on every
// delivery. The decoder is past its leading space.
func (d *Decoder) scanNumber() (int, error) {
	i := d.pos
	n := len(d.data)
	if i < n && d.data[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < n && d.data[i] >= '0' && d.data[i] <= '9' {
			i++
		}
		return i - j
	}
	switch {
	case i < n && d.data[i] == '0':
		i++
	case i < n && d.data[i] >= '1' && d.data[i] <= '9':
		digits()
	default:
		d.pos = i
		if i >= n {
			return 0, d.eof()
		}
		return 0, d.syntax("invalid character %s in numeric literal", quoteChar(d.data[i]))
	}
	if i < n && d.data[i] == '.' {
		i++
		if digits() == 0 {
			d.pos = i
			if i >= n {
				return 0, d.eof()
			}
			return 0, d.syntax("invalid character %s after decimal point in numeric literal", quoteChar(d.data[i]))
		}
	}
	if i < n && (d.data[i] == 'e' || d.data[i] == 'E') {
		i++
		if i < n && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		if digits() == 0 {
			d.pos = i
			if i >= n {
				return 0, d.eof()
			}
			return 0, d.syntax("invalid character %s in exponent of numeric literal", quoteChar(d.data[i]))
		}
	}
	d.pos = i
	d.opened = false
	return i, nil
}

// numberText reads a number, or reports the value of another type as a
// type error expecting want.
func (d *Decoder) numberText(want string) (string, int, error) {
	d.skipSpace()
	start := d.pos
	if d.pos >= len(d.data) || kindOfByte(d.data[d.pos]) != KindNumber {
		return "", start, d.typeError(want)
	}
	text, err := d.number()
	return text, start, err
}

// decimal splits a JSON number's text into its sign, its significant
// digits without leading or trailing zeros, and the power of ten they are
// multiplied by: "-12.50e1" is (true, "125", 0).
func decimal(text string) (neg bool, digits string, exp int) {
	if text[0] == '-' {
		neg, text = true, text[1:]
	}
	mant, expText := text, ""
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		mant, expText = text[:i], text[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	e := 0
	if expText != "" {
		// Exponents beyond ±1e9 saturate: such numbers are far outside any
		// Go type, and their integrality only depends on the sign.
		v, err := strconv.ParseInt(expText, 10, 64)
		if err != nil || v > 1e9 || v < -1e9 {
			if strings.HasPrefix(expText, "-") {
				v = -1e9
			} else {
				v = 1e9
			}
		}
		e = int(v)
	}
	all := strings.TrimLeft(intPart+frac, "0")
	e -= len(frac)
	trimmed := strings.TrimRight(all, "0")
	e += len(all) - len(trimmed)
	return neg, trimmed, e
}

// integral reports whether a JSON number's value is an integer (1.0, 1e3
// and -0 are).
func integral(text string) bool {
	_, digits, exp := decimal(text)
	return digits == "" || exp >= 0
}

// integer reads a JSON number whose value must be an integer within
// [min, max] (as a uint64 magnitude with a sign): "1.0" and "1e2" are
// integers, as JSON Schema says.
func (d *Decoder) integer(want string, maxPos uint64, maxNeg uint64) (neg bool, mag uint64, err error) {
	text, start, err := d.numberText(want)
	if err != nil {
		return false, 0, err
	}
	neg, digits, exp := decimal(text)
	if digits == "" {
		return false, 0, nil
	}
	if exp < 0 {
		return false, 0, &DecodeError{Keyword: "type", Message: "expected " + want + ", but got number", Offset: start}
	}
	unrepresentable := func() error {
		return &DecodeError{Message: fmt.Sprintf("%s is out of the range of %s", text, want), Offset: start, unrepresentable: true}
	}
	if len(digits)+exp > 20 {
		return false, 0, unrepresentable()
	}
	mag, perr := strconv.ParseUint(digits, 10, 64)
	if perr != nil {
		return false, 0, unrepresentable()
	}
	for ; exp > 0; exp-- {
		if mag > math.MaxUint64/10 {
			return false, 0, unrepresentable()
		}
		mag *= 10
	}
	limit := maxPos
	if neg {
		limit = maxNeg
	}
	if mag > limit {
		return false, 0, unrepresentable()
	}
	return neg, mag, nil
}

// Int64 reads an integer that fits int64.
func (d *Decoder) Int64() (int64, error) {
	// Fast path: a plain run of digits.
	d.skipSpace()
	i, n := d.pos, len(d.data)
	neg := i < n && d.data[i] == '-'
	if neg {
		i++
	}
	j := i
	var v uint64
	for j < n && j-i < 18 && d.data[j] >= '0' && d.data[j] <= '9' {
		v = v*10 + uint64(d.data[j]-'0')
		j++
	}
	if j > i && j-i < 18 && (j-i == 1 || d.data[i] != '0') && (j >= n || !continuesNumber(d.data[j])) {
		d.pos = j
		d.opened = false
		if neg {
			return -int64(v), nil
		}
		return int64(v), nil
	}
	neg, mag, err := d.integer("integer", math.MaxInt64, 1<<63)
	if err != nil {
		return 0, err
	}
	if neg {
		return int64(-mag), nil
	}
	return int64(mag), nil
}

func continuesNumber(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E'
}

// Int32 reads an integer that fits int32.
func (d *Decoder) Int32() (int32, error) {
	neg, mag, err := d.integer("integer", math.MaxInt32, 1<<31)
	if err != nil {
		return 0, err
	}
	if neg {
		return int32(-int64(mag)), nil
	}
	return int32(mag), nil
}

// Uint32 reads a non-negative integer that fits uint32.
func (d *Decoder) Uint32() (uint32, error) {
	_, mag, err := d.integer("integer", math.MaxUint32, 0)
	return uint32(mag), err
}

// Uint64 reads a non-negative integer that fits uint64.
func (d *Decoder) Uint64() (uint64, error) {
	_, mag, err := d.integer("integer", math.MaxUint64, 0)
	return mag, err
}

// Float64 reads a number that fits float64.
func (d *Decoder) Float64() (float64, error) {
	text, start, err := d.numberText("number")
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, &DecodeError{Message: fmt.Sprintf("%s is out of the range of float64", text), Offset: start, unrepresentable: true}
	}
	return f, nil
}

// Float32 reads a number that fits float32.
func (d *Decoder) Float32() (float32, error) {
	text, start, err := d.numberText("number")
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(text, 32)
	if err != nil {
		return 0, &DecodeError{Message: fmt.Sprintf("%s is out of the range of float32", text), Offset: start, unrepresentable: true}
	}
	return float32(f), nil
}

// Skip reads a value of any type, checking its syntax.
func (d *Decoder) Skip() error {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return d.eof()
	}
	switch kindOfByte(d.data[d.pos]) {
	case KindObject:
		if err := d.ObjectStart(); err != nil {
			return err
		}
		for d.NextMember() {
			if d.Key(); d.err != nil {
				return d.err
			}
			if err := d.Skip(); err != nil {
				return err
			}
		}
		return d.err
	case KindArray:
		if err := d.ArrayStart(); err != nil {
			return err
		}
		for d.NextItem() {
			if err := d.Skip(); err != nil {
				return err
			}
		}
		return d.err
	case KindString:
		_, err := d.stringBytes()
		return err
	case KindBoolean, KindNull:
		return d.literal()
	case KindNumber:
		_, err := d.scanNumber()
		return err
	}
	return d.syntax("invalid character %s looking for beginning of value", quoteChar(d.data[d.pos]))
}

// RawBytes reads a value of any type and returns its text, which is valid
// until the input is changed.
func (d *Decoder) RawBytes() ([]byte, error) {
	d.skipSpace()
	start := d.pos
	if err := d.Skip(); err != nil {
		return nil, err
	}
	return d.data[start:d.pos], nil
}

// Raw reads a value of any type and returns a copy of its text, as
// json.RawMessage keeps it.
func (d *Decoder) Raw() (json.RawMessage, error) {
	b, err := d.RawBytes()
	if err != nil {
		return nil, err
	}
	return append(json.RawMessage(nil), b...), nil
}

// Mark returns the decoder's position, for [Decoder.Reset].
func (d *Decoder) Mark() int {
	d.skipSpace()
	return d.pos
}

// Reset moves back to a position returned by [Decoder.Mark].
func (d *Decoder) Reset(mark int) {
	d.pos, d.err = mark, nil
	d.opened = false
}

// Discriminator reads, without consuming the object that comes next, the
// string member property that tells a tagged union's variants apart. With
// fold, the member name matches regardless of case when no exact match
// exists.
func (d *Decoder) Discriminator(property string, fold bool) (string, error) {
	mark, depth := d.Mark(), d.depth
	defer func() { d.Reset(mark); d.depth = depth }()
	if err := d.ObjectStart(); err != nil {
		return "", err
	}
	found, folded := false, false
	var tag string
	for d.NextMember() {
		key := d.Key()
		if d.err != nil {
			break
		}
		exact := string(key) == property
		if exact || fold && !found && strings.EqualFold(string(key), property) {
			if d.Peek() != KindString {
				return "", &DecodeError{Path: []string{string(key)}, Keyword: "type",
					Message: fmt.Sprintf("member %q, which tells the variants apart, must be a string", property), Offset: d.pos}
			}
			s, err := d.String()
			if err != nil {
				return "", err
			}
			if exact || !folded {
				tag, found, folded = s, true, !exact
			}
			continue
		}
		if err := d.Skip(); err != nil {
			return "", err
		}
	}
	if d.err != nil {
		return "", d.err
	}
	if !found {
		return "", &DecodeError{Keyword: "required", Message: fmt.Sprintf("member %q, which tells the variants apart, is missing", property), Offset: mark}
	}
	return tag, nil
}

// Unknown is the error of a tagged union whose discriminator names no
// variant.
func Unknown(property, tag string) error {
	return &DecodeError{Path: []string{property}, Keyword: "oneOf", Message: fmt.Sprintf("%s %q names no variant", property, tag)}
}

// TooMany is the error of a tuple with more elements than it allows.
func TooMany(d *Decoder, max int) error {
	return &DecodeError{Keyword: "items", Message: fmt.Sprintf("only %d items are allowed", max), Offset: d.pos}
}

// TooFew is the error of a tuple without an element it requires.
func TooFew(d *Decoder, min, got int) error {
	return &DecodeError{Keyword: "minItems", Message: fmt.Sprintf("minimum %d items required, but found %d items", min, got), Offset: d.pos}
}

// NotNull is the error of a null where the Go type cannot hold one: a
// member whose schema admits null only where it is required, say.
func NotNull(d *Decoder, want string) error {
	return &DecodeError{Keyword: "type", Message: "expected " + want + ", but got null", Offset: d.pos}
}

// KindOf returns the JSON type of a raw value ("integer" for integral
// numbers), or KindInvalid when it is not one well-formed value.
func KindOf(raw []byte) Kind {
	if len(raw) == 0 {
		return KindNull // a nil json.RawMessage encodes as null
	}
	d := NewDecoder(raw)
	k := d.Peek()
	switch k {
	case KindNumber:
		text, err := d.number()
		if err != nil {
			return KindInvalid
		}
		if integral(text) {
			k = KindInteger
		}
	case KindInvalid:
		return KindInvalid
	default:
		if d.Skip() != nil {
			return KindInvalid
		}
	}
	if d.End() != nil {
		return KindInvalid
	}
	return k
}
