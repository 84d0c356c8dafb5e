"""A YAML reader for the subset of YAML that lockstep contract files use.

Python's standard library has no YAML parser, so this module reads what
contracts and their schema files are written in, and refuses the rest with
an error naming the line:

  * block mappings ("key: value") and block sequences ("- item"), nested by
    indentation (spaces only), including a sequence at its key's indentation
    and compact mappings inside sequence items ("- a: 1");
  * flow mappings and sequences ({a: 1, b: [x, y]}), which may span lines;
  * plain, single-quoted ('it''s') and double-quoted ("\\u00e9\\n") scalars
    on one line each;
  * comments (" # ..." and whole-line), a leading "---" and a final "...".

  * tags before a scalar or a flow collection on the same line ("!!int
    \"12\"", "! 12", "!<tag:yaml.org,2002:str> 12", "!!seq [1]"): a tag
    decides a scalar's type over quoting; a collection's tag is ignored.

Not supported (an error, never a silent misreading): anchors and aliases,
merge keys, tags on keys or before a block collection, block scalars (| and
>), scalars spanning lines, complex keys, several documents.

Scalars resolve as in docs/protocol.md ("From YAML to JSON"): plain true,
True, TRUE, false, False, FALSE are booleans; plain null, Null, NULL, ~ and
an empty value are null; plain integers (decimal, 0x, 0o, 0b, a leading 0
for octal, "_" separators, a sign) and floats are numbers; everything else,
and every quoted scalar, is a string.

Objects are returned as lists of (key, value) pairs in document order so
that the caller keeps the source order; numbers as Number.
"""

import re


class YAMLError(ValueError):
    """A contract file this reader cannot or will not read."""


class Number:
    """A number as written (JSON spelling) together with its value."""

    __slots__ = ("text", "value")

    def __init__(self, text, value):
        self.text = text
        self.value = value

    def __repr__(self):
        return "Number(%s)" % self.text


class Mapping(list):
    """An object: a list of (key, value) pairs in document order."""


_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?\Z")
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ]|\Z)")
_NULLS = {"", "~", "null", "Null", "NULL"}
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_SPECIAL_FLOATS = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN"}


def _parse_int(plain):
    """Integer syntax with base prefixes and a sign, as Go's ParseInt(s, 0)."""
    m = re.match(r"([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)\Z", plain)
    if not m:
        return None
    sign, digits = m.groups()
    low = digits.lower()
    if low.startswith("0x"):
        v = int(low[2:], 16)
    elif low.startswith("0o"):
        v = int(low[2:], 8)
    elif low.startswith("0b"):
        v = int(low[2:], 2)
    elif len(digits) > 1 and digits[0] == "0":
        v = int(digits, 8)
    else:
        v = int(digits)
    if sign == "-":
        v = -v
    if v < -(1 << 63) or v >= (1 << 64):
        return None
    return v


def resolve_plain(text, line):
    """The JSON value of a plain (unquoted) scalar."""
    if text in _NULLS:
        return None
    if text in _BOOLS:
        return _BOOLS[text]
    if text in _SPECIAL_FLOATS:
        raise YAMLError("line %d: %s is not a JSON number" % (line, text))
    if text == "<<":
        raise YAMLError("line %d: YAML merge keys (<<) are not supported in contracts" % line)
    n = _plain_number(text)
    return text if n is None else n[1]


def _plain_number(text):
    """(is_integer, Number) when YAML reads the plain scalar text as a
    number, else None: only text that starts with a digit, a sign or "."."""
    if not text or text[0] not in "0123456789+-.":
        return None
    if text[0] == ".":
        try:
            v = float(text)
        except ValueError:
            return None
        if v != v or v in (float("inf"), float("-inf")):
            return None
        return False, Number(text if _JSON_NUMBER.match(text) else _float_text(v), v)
    if text[0] != "+" and text[0] != "-" and _TIMESTAMP.match(text):
        return None  # a date or time: YAML gives it as a string
    plain = text.replace("_", "")
    iv = _parse_int(plain)
    if iv is not None:
        return True, Number(text if _JSON_NUMBER.match(text) else str(iv), float(iv))
    if _YAML_FLOAT.match(plain):
        try:
            v = float(plain)
        except ValueError:
            return None
        if v in (float("inf"), float("-inf")):
            return None
        return False, Number(text if _JSON_NUMBER.match(text) else _float_text(v), v)
    return None


def resolve_tagged(tag, text, quoted, line):
    """The JSON value of a scalar with a tag, which decides its type over
    quoting (docs/protocol.md, step 1)."""
    if tag.startswith("!<tag:yaml.org,2002:") and tag.endswith(">"):
        tag = "!!" + tag[len("!<tag:yaml.org,2002:"):-1]
    if tag == "!":
        # The non-specific tag: as if there were none.
        return text if quoted else resolve_plain(text, line)
    if tag in ("!!str", "!!timestamp"):
        return text
    if tag == "!!null":
        return None
    if tag == "!!bool":
        if text in _BOOLS:
            return _BOOLS[text]
        raise YAMLError("line %d: cannot read %r as a !!bool" % (line, text))
    if tag in ("!!int", "!!float"):
        if _JSON_NUMBER.match(text):
            return Number(text, float(text))
        n = None if text in _SPECIAL_FLOATS else _plain_number(text)
        if n is None or (tag == "!!int" and not n[0]):
            raise YAMLError("line %d: cannot read %r as a %s" % (line, text, tag))
        return n[1]
    raise YAMLError("line %d: YAML tag %s has no JSON equivalent" % (line, tag))


def _float_text(v):
    r = repr(v)
    return r[:-2] if r.endswith(".0") else r


_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v",
    "f": "\f", "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\",
    "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029",
}


class _Parser:
    def __init__(self, text):
        if text.startswith("\ufeff"):
            text = text[1:]
        if "\t" in "".join(l[: len(l) - len(l.lstrip(" \t"))] for l in text.split("\n")):
            raise YAMLError("tabs in indentation are not YAML")
        self.s = text
        self.i = 0

    # -- position helpers
    def line(self):
        return self.s.count("\n", 0, self.i) + 1

    def col(self):
        return self.i - (self.s.rfind("\n", 0, self.i) + 1)

    def peek(self, k=0):
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def fail(self, msg):
        raise YAMLError("line %d: %s" % (self.line(), msg))

    def eof(self):
        return self.i >= len(self.s)

    def skip_space(self):
        while self.peek() == " ":
            self.i += 1

    def skip_comment(self):
        if self.peek() == "#":
            while not self.eof() and self.peek() != "\n":
                self.i += 1

    def skip_blank(self):
        """Skips spaces, comments and line breaks."""
        while not self.eof():
            c = self.peek()
            if c in " \r\n":
                self.i += 1
            elif c == "#" and (self.i == 0 or self.s[self.i - 1] in " \n\r"):
                self.skip_comment()
            else:
                return

    def end_of_line(self):
        """Requires only spaces and a comment up to the line's end."""
        self.skip_space()
        if self.peek() == "#":
            self.skip_comment()
        if self.peek() == "\r":
            self.i += 1
        if not self.eof() and self.peek() != "\n":
            self.fail("unexpected %r after the value (scalars spanning lines are not supported)" % self.peek())

    # -- documents
    def document(self):
        self.skip_blank()
        if self.s.startswith("---", self.i) and self.peek(3) in ("", " ", "\n", "\r"):
            self.i += 3
        value = self.block(-1)
        self.skip_blank()
        if self.s.startswith("...", self.i):
            self.i += 3
            self.skip_blank()
        if not self.eof():
            if self.s.startswith("---", self.i):
                self.fail("expected exactly one YAML document")
            self.fail("unexpected %r at indentation %d" % (self.peek(), self.col()))
        return value

    def block(self, parent):
        """A node indented more than parent, or null if there is none."""
        self.skip_blank()
        if self.eof() or self.col() <= parent:
            return None
        indent = self.col()
        c = self.peek()
        if c == "-" and self.peek(1) in ("", " ", "\n", "\r"):
            return self.sequence(indent)
        if c == "!":
            value = self.tagged(flow=False)
            self.end_of_line()
            return value
        if c in "&*|>":
            self.fail("YAML %s is not supported in contracts" % {"&": "anchors", "*": "aliases", "|": "block scalars", ">": "block scalars"}[c])
        if c in "[{":
            value = self.flow()
            self.end_of_line()
            return value
        start = self.i
        key = self.key_or_none()
        if key is not None:
            self.i = start
            return self.mapping(indent)
        self.i = start
        value = self.scalar(flow=False)
        self.end_of_line()
        return value

    def key_or_none(self):
        """Reads a mapping key and its ':' if one starts here."""
        c = self.peek()
        if c in "\"'":
            line = self.line()
            key = self.quoted()
            self.skip_space()
            if self.peek() == ":" and self.peek(1) in ("", " ", "\n", "\r"):
                self.i += 1
                return key
            if self.line() != line:
                self.fail("a quoted key must end on its line")
            return None
        j = self.i
        while j < len(self.s) and self.s[j] != "\n":
            if self.s[j] == ":" and (j + 1 >= len(self.s) or self.s[j + 1] in " \n\r"):
                key = self.s[self.i:j].rstrip(" ")
                if " #" in key:
                    return None
                self.i = j + 1
                if key == "<<":
                    self.fail("YAML merge keys (<<) are not supported in contracts")
                if key.startswith(("?", "&", "*", "!")):
                    self.fail("complex keys, anchors, aliases and tags are not supported in contracts")
                return key
            if self.s[j] == "#" and j > self.i and self.s[j - 1] == " ":
                return None
            j += 1
        return None

    def mapping(self, indent):
        out = Mapping()
        seen = set()
        while True:
            key_line = self.line()
            key = self.key_or_none()
            if key is None:
                self.fail("expected a mapping key at indentation %d" % indent)
            if key in seen:
                raise YAMLError("line %d: duplicate member %r" % (key_line, key))
            seen.add(key)
            self.skip_space()
            self.skip_comment()
            if self.eof() or self.peek() in "\r\n":
                # The value is on the following lines: a nested block, or a
                # sequence at the key's own indentation.
                save = self.i
                self.skip_blank()
                if not self.eof() and self.col() == indent and self.peek() == "-" and self.peek(1) in ("", " ", "\n", "\r"):
                    value = self.sequence(indent)
                else:
                    self.i = save
                    value = self.block(indent)
            else:
                value = self.inline()
            out.append((key, value))
            self.skip_blank()
            if self.eof() or self.col() < indent:
                return out
            if self.col() > indent:
                self.fail("unexpected indentation")
            if self.peek() == "-" and self.peek(1) in ("", " ", "\n", "\r"):
                return out

    def sequence(self, indent):
        out = []
        while True:
            self.i += 1  # the dash
            self.skip_space()
            self.skip_comment()
            if self.eof() or self.peek() in "\r\n":
                out.append(self.block(indent))
            else:
                out.append(self.block(indent))
            self.skip_blank()
            if self.eof() or self.col() < indent:
                return out
            if self.col() > indent:
                self.fail("unexpected indentation")
            if not (self.peek() == "-" and self.peek(1) in ("", " ", "\n", "\r")):
                return out

    def inline(self):
        """A value on the rest of a mapping's line."""
        c = self.peek()
        if c in "&*!|>":
            return self.block(self.col() - 1)
        if c in "[{":
            value = self.flow()
        else:
            value = self.scalar(flow=False)
        self.end_of_line()
        return value

    # -- flow collections
    def flow_blank(self):
        while not self.eof():
            c = self.peek()
            if c in " \r\n":
                self.i += 1
            elif c == "#" and self.s[self.i - 1] in " \n\r":
                self.skip_comment()
            else:
                return

    def flow(self):
        c = self.peek()
        self.i += 1
        if c == "[":
            out = []
            while True:
                self.flow_blank()
                if self.peek() == "]":
                    self.i += 1
                    return out
                out.append(self.flow_value())
                self.flow_blank()
                if self.peek() == ",":
                    self.i += 1
                    continue
                if self.peek() == "]":
                    self.i += 1
                    return out
                self.fail("expected ',' or ']' in a flow sequence")
        out = Mapping()
        seen = set()
        while True:
            self.flow_blank()
            if self.peek() == "}":
                self.i += 1
                return out
            key_line = self.line()
            key = self.flow_key()
            if key in seen:
                raise YAMLError("line %d: duplicate member %r" % (key_line, key))
            seen.add(key)
            self.flow_blank()
            if self.peek() in ",}":
                # {description: a, b} reads as two members, the second without
                # a value: prose cut short by an unquoted comma. Refused, as
                # docs/protocol.md says (write b: null for a null).
                raise YAMLError("line %d: member %r has no value: a comma ends an unquoted scalar in a {...} mapping; quote the text before it" % (key_line, key))
            value = self.flow_value()
            out.append((key, value))
            self.flow_blank()
            if self.peek() == ",":
                self.i += 1
                continue
            if self.peek() == "}":
                self.i += 1
                return out
            self.fail("expected ',' or '}' in a flow mapping")

    def flow_key(self):
        if self.peek() in "\"'":
            key = self.quoted()
            self.flow_blank()
            if self.peek() != ":":
                self.fail("expected ':' after a key")
            self.i += 1
            return key
        j = self.i
        while j < len(self.s):
            ch = self.s[j]
            if ch == ":" and (j + 1 >= len(self.s) or self.s[j + 1] in " \n\r,}]"):
                key = self.s[self.i:j].strip(" ")
                self.i = j + 1
                return key
            if ch in ",}":
                # A key without ':' ({a, b: 1}): flow() refuses it.
                key = self.s[self.i:j].strip(" ")
                self.i = j
                return key
            if ch in "]\n[{":
                break
            j += 1
        self.fail("expected a key in a flow mapping")

    def flow_value(self):
        c = self.peek()
        if c in "[{":
            return self.flow()
        if c == "!":
            return self.tagged(flow=True)
        if c in "&*|>":
            self.fail("YAML anchors, aliases and block scalars are not supported in contracts")
        return self.scalar(flow=True)

    def tagged(self, flow):
        """A tag and the scalar or flow collection after it on its line."""
        line = self.line()
        j = self.i + 1
        if self.peek(1) == "<":
            end = self.s.find(">", self.i)
            if end < 0 or "\n" in self.s[self.i:end]:
                self.fail("unterminated verbatim tag")
            j = end + 1
        else:
            while j < len(self.s) and self.s[j] not in " \t\r\n" and not (flow and self.s[j] in ",[]{}"):
                j += 1
        tag = self.s[self.i:j]
        self.i = j
        if self.eof() or self.peek() != " ":
            self.fail("a tag must be followed by a space and its value on the same line")
        self.skip_space()
        c = self.peek()
        if self.eof() or c in "\r\n#" or (flow and c in ",]}"):
            self.fail("a tag before a block collection or an empty value is not supported in contracts")
        if c in "[{":
            return self.flow()  # a collection's tag is ignored, as Go's reader ignores it
        if c in "&*!|>":
            self.fail("YAML anchors, aliases, block scalars and several tags on one value are not supported in contracts")
        if c in "\"'":
            return resolve_tagged(tag, self.quoted(), True, line)
        return resolve_tagged(tag, self.plain_text(flow), False, line)

    # -- scalars
    def scalar(self, flow):
        c = self.peek()
        if c in "\"'":
            return self.quoted()
        line = self.line()
        return resolve_plain(self.plain_text(flow), line)

    def plain_text(self, flow):
        """The text of a plain scalar starting here."""
        j = self.i
        while j < len(self.s):
            ch = self.s[j]
            if ch in "\r\n":
                break
            if ch == "#" and j > self.i and self.s[j - 1] == " ":
                break
            if flow and ch in ",]}":
                break
            if flow and ch == ":" and (j + 1 >= len(self.s) or self.s[j + 1] in " \n\r,]}"):
                break
            if not flow and ch == ":" and (j + 1 >= len(self.s) or self.s[j + 1] in " \n\r"):
                self.fail("a mapping value is not allowed here")
            j += 1
        text = self.s[self.i:j].rstrip(" ")
        self.i = self.i + len(text)
        return text

    def quoted(self):
        q = self.peek()
        self.i += 1
        out = []
        while True:
            if self.eof() or self.peek() == "\n":
                self.fail("unterminated quoted scalar (scalars spanning lines are not supported)")
            c = self.peek()
            if q == "'":
                if c == "'":
                    if self.peek(1) == "'":
                        out.append("'")
                        self.i += 2
                        continue
                    self.i += 1
                    return "".join(out)
                out.append(c)
                self.i += 1
                continue
            if c == '"':
                self.i += 1
                return "".join(out)
            if c == "\\":
                e = self.peek(1)
                if e in _ESCAPES:
                    out.append(_ESCAPES[e])
                    self.i += 2
                    continue
                width = {"x": 2, "u": 4, "U": 8}.get(e)
                if width is None:
                    self.fail("unknown escape \\%s" % e)
                digits = self.s[self.i + 2:self.i + 2 + width]
                if not re.fullmatch(r"[0-9a-fA-F]{%d}" % width, digits):
                    self.fail("bad escape \\%s%s" % (e, digits))
                out.append(chr(int(digits, 16)))
                self.i += 2 + width
                continue
            out.append(c)
            self.i += 1


def loads(text):
    """Reads one YAML document of the contract subset."""
    return _Parser(text).document()
