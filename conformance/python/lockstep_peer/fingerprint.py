"""The lsfp1 fingerprint of a lockstep contract, computed from its files.

This follows docs/protocol.md ("The canonical form") step by step:

  1. read the contract file (YAML or JSON) and every schema file it
     references, as JSON values;
  2. resolve each "$ref" and rewrite every message schema, whatever its
     draft, into draft 2020-12 ("normalise");
  3. bundle each message into one self-contained document: references
     outside the message are copied under "$defs" ("bundle");
  4. build the canonical document of the contract, strip annotations from
     every schema, serialise it by RFC 8785 and hash it with SHA-256.

Usage: python3 -m lockstep_peer.fingerprint [--canonical] <contract folder or file>...
"""

import hashlib
import json
import os
import re
import sys
import urllib.parse

from . import yamlsubset
from .yamlsubset import Mapping, Number

PREFIX = "lsfp1:"
DRAFT2020_URL = "https://json-schema.org/draft/2020-12/schema"
CASE_INSENSITIVE_KEY = "x-lockstep-case-insensitive"
FILE_NAMES = ("contract.yaml", "contract.yml", "contract.json")


class ContractError(ValueError):
    """A contract that has no fingerprint."""


# ---------------------------------------------------------------- values

NULL, BOOL, NUMBER, STRING, ARRAY, OBJECT = range(6)


class Node:
    """One JSON value of a document, with where it sits.

    Objects keep their members in source order (keys, values). Normalised
    nodes remember the source node they were made from (origin), the root
    of the normalised schema resource they belong to (root), their JSON
    pointer within it (pointer), and the normalised target of their "$ref"
    (ref)."""

    __slots__ = ("kind", "value", "keys", "values", "items", "doc", "pointer", "origin", "root", "ref", "info")

    def __init__(self, kind, value=None):
        self.kind = kind
        self.value = value
        self.keys = []
        self.values = []
        self.items = []
        self.doc = None
        self.pointer = ""
        self.origin = None
        self.root = None
        self.ref = None
        self.info = None

    def get(self, key):
        if self.kind != OBJECT:
            return None
        for k, v in zip(self.keys, self.values):
            if k == key:
                return v
        return None

    def source(self):
        n = self
        while n.origin is not None:
            n = n.origin
        return n

    def lookup(self, pointer):
        cur = self
        if pointer == "":
            return cur
        for raw in pointer[1:].split("/"):
            tok = raw.replace("~1", "/").replace("~0", "~")
            if cur.kind == OBJECT:
                nxt = cur.get(tok)
                if nxt is None:
                    raise ContractError("JSON pointer %r: no member %r" % (pointer, tok))
                cur = nxt
            elif cur.kind == ARRAY:
                if not re.fullmatch(r"0|[1-9][0-9]*", tok) or int(tok) >= len(cur.items):
                    raise ContractError("JSON pointer %r: no element %r" % (pointer, tok))
                cur = cur.items[int(tok)]
            else:
                raise ContractError("JSON pointer %r: no member %r" % (pointer, tok))
        return cur


def to_node(value):
    """A Node tree from a value read by yamlsubset or by read_json."""
    if value is None:
        return Node(NULL)
    if value is True or value is False:
        return Node(BOOL, value)
    if isinstance(value, Number):
        return Node(NUMBER, value)
    if isinstance(value, str):
        return Node(STRING, value)
    if isinstance(value, Mapping):
        n = Node(OBJECT)
        for k, v in value:
            n.keys.append(k)
            n.values.append(to_node(v))
        return n
    if isinstance(value, list):
        n = Node(ARRAY)
        n.items = [to_node(v) for v in value]
        return n
    raise ContractError("unexpected value %r" % (value,))


def escape_token(s):
    return s.replace("~", "~0").replace("/", "~1")


def child(p, token):
    return p + "/" + escape_token(token)


def set_pointers(n, doc, p):
    n.doc, n.pointer = doc, p
    for k, v in zip(n.keys, n.values):
        set_pointers(v, doc, child(p, k))
    for i, it in enumerate(n.items):
        set_pointers(it, doc, child(p, str(i)))


def read_json(text):
    """Reads JSON keeping member order and number spellings; duplicate
    member names are an error."""

    def pairs(items):
        seen = set()
        for k, _ in items:
            if k in seen:
                raise ContractError("duplicate member %r" % k)
            seen.add(k)
        return Mapping(items)

    def number(text):
        return Number(text, float(text))

    return json.loads(text, object_pairs_hook=pairs, parse_float=number, parse_int=number,
                      parse_constant=lambda c: (_ for _ in ()).throw(ContractError("%s is not JSON" % c)))


def parse_file(path, data):
    if path.lower().endswith(".json"):
        return to_node(read_json(data))
    return to_node(yamlsubset.loads(data))


# ---------------------------------------------------------------- drafts

D4, D6, D7, D2019, D2020 = 4, 6, 7, 2019, 2020

DRAFTS = {
    "json-schema.org/draft-04/schema": D4,
    "json-schema.org/draft-06/schema": D6,
    "json-schema.org/draft-07/schema": D7,
    "json-schema.org/draft/2019-09/schema": D2019,
    "json-schema.org/draft/2020-12/schema": D2020,
}


def draft_of(node):
    if node.kind != STRING:
        raise ContractError("$schema must be a string")
    u = node.value
    if u.endswith("#"):
        u = u[:-1]
    for scheme in ("https://", "http://"):
        if u.startswith(scheme):
            u = u[len(scheme):]
            break
    if u not in DRAFTS:
        raise ContractError("$schema %r is not a known draft" % node.value)
    return DRAFTS[u]


VALUE, SCHEMA, SCHEMAS, SCHEMA_MAP, ITEMS, DEPS = range(6)

# keyword: (shape, first draft, last draft or 0)
KEYWORDS = {
    "$schema": (VALUE, D4, 0), "$id": (VALUE, D6, 0), "id": (VALUE, D4, D4),
    "$ref": (VALUE, D4, 0), "$anchor": (VALUE, D2019, 0), "$dynamicRef": (VALUE, D2020, 0),
    "$dynamicAnchor": (VALUE, D2020, 0), "$recursiveRef": (VALUE, D2019, D2019),
    "$recursiveAnchor": (VALUE, D2019, D2019), "$vocabulary": (VALUE, D2019, 0),
    "$comment": (VALUE, D7, 0),
    "$defs": (SCHEMA_MAP, D2019, 0), "definitions": (SCHEMA_MAP, D4, 0),
    "allOf": (SCHEMAS, D4, 0), "anyOf": (SCHEMAS, D4, 0), "oneOf": (SCHEMAS, D4, 0),
    "not": (SCHEMA, D4, 0), "if": (SCHEMA, D7, 0), "then": (SCHEMA, D7, 0), "else": (SCHEMA, D7, 0),
    "properties": (SCHEMA_MAP, D4, 0), "patternProperties": (SCHEMA_MAP, D4, 0),
    "additionalProperties": (SCHEMA, D4, 0), "propertyNames": (SCHEMA, D6, 0),
    "dependencies": (DEPS, D4, 0), "dependentSchemas": (SCHEMA_MAP, D2019, 0),
    "dependentRequired": (VALUE, D2019, 0),
    "items": (ITEMS, D4, 0), "additionalItems": (SCHEMA, D4, D2019),
    "prefixItems": (SCHEMAS, D2020, 0), "contains": (SCHEMA, D6, 0),
    "unevaluatedItems": (SCHEMA, D2019, 0), "unevaluatedProperties": (SCHEMA, D2019, 0),
    "contentSchema": (SCHEMA, D2019, 0),
    "type": (VALUE, D4, 0), "enum": (VALUE, D4, 0), "const": (VALUE, D6, 0),
    "multipleOf": (VALUE, D4, 0), "maximum": (VALUE, D4, 0), "exclusiveMaximum": (VALUE, D4, 0),
    "minimum": (VALUE, D4, 0), "exclusiveMinimum": (VALUE, D4, 0),
    "maxLength": (VALUE, D4, 0), "minLength": (VALUE, D4, 0), "pattern": (VALUE, D4, 0),
    "maxItems": (VALUE, D4, 0), "minItems": (VALUE, D4, 0), "uniqueItems": (VALUE, D4, 0),
    "maxContains": (VALUE, D2019, 0), "minContains": (VALUE, D2019, 0),
    "maxProperties": (VALUE, D4, 0), "minProperties": (VALUE, D4, 0),
    "required": (VALUE, D4, 0), "format": (VALUE, D4, 0),
    "contentEncoding": (VALUE, D7, 0), "contentMediaType": (VALUE, D7, 0),
    "title": (VALUE, D4, 0), "description": (VALUE, D4, 0), "default": (VALUE, D4, 0),
    "deprecated": (VALUE, D2019, 0), "readOnly": (VALUE, D7, 0), "writeOnly": (VALUE, D7, 0),
    "examples": (VALUE, D6, 0),
}


def in_draft(key, draft):
    _, since, until = KEYWORDS[key]
    return draft >= since and (until == 0 or draft <= until)


def shape(key, draft):
    """How key holds subschemas in draft (VALUE for unknown keywords)."""
    if key not in KEYWORDS:
        return VALUE
    if key in ("$defs", "definitions"):
        return SCHEMA_MAP
    if not in_draft(key, draft):
        return VALUE
    return KEYWORDS[key][0]


# ---------------------------------------------------------------- references

class Document:
    def __init__(self, url, root, contract=False):
        self.url, self.root, self.contract = url, root, contract


class Info:
    __slots__ = ("base", "draft", "resource")

    def __init__(self, base, draft, resource):
        self.base, self.draft, self.resource = base, draft, resource


def file_url(path):
    return "file://" + urllib.parse.quote(os.path.abspath(path))


def resolve_uri(base, ref):
    return urllib.parse.urljoin(base, ref)


def split_fragment(u):
    i = u.find("#")
    if i < 0:
        return u, ""
    return u[:i], urllib.parse.unquote(u[i + 1:])


class Resolver:
    def __init__(self):
        self.docs = {}
        self.ids = {}
        self.anchors = {}

    def load(self, url):
        if url in self.docs:
            return self.docs[url]
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme != "file":
            raise ContractError("reference %s is not a file beside the contract: remote schemas are not fetched" % url)
        path = urllib.parse.unquote(parsed.path)
        with open(path, encoding="utf-8") as f:
            root = parse_file(path, f.read())
        doc = Document(url, root)
        set_pointers(root, doc, "")
        self.docs[url] = doc
        if root.kind not in (OBJECT, BOOL):
            raise ContractError("schema file %s must hold an object or a boolean" % path)
        draft = D2020
        if root.get("$schema") is not None:
            draft = draft_of(root.get("$schema"))
        self.index(root, url, draft, root)
        return doc

    def index(self, n, base, draft, resource, depth=0):
        if n.info is not None or depth > 512:
            return
        if n.kind != OBJECT:
            n.info = Info(base, draft, resource)
            return
        id_key = "id" if draft == D4 else "$id"
        ident = n.get(id_key)
        if ident is not None and ident.kind == STRING:
            doc, frag = split_fragment(resolve_uri(base, ident.value))
            if frag != "" and ident.value.startswith("#") and draft < D2019:
                self.anchors[doc + "#" + frag] = n
            else:
                base = doc
                self.ids.setdefault(base, n)
        n.info = Info(base, draft, resource)
        for key in ("$anchor", "$dynamicAnchor"):
            a = n.get(key)
            if a is not None and a.kind == STRING and in_draft(key, draft):
                self.anchors[base + "#" + a.value] = n
        for key, v in zip(n.keys, n.values):
            s = shape(key, draft)
            if s == SCHEMA:
                self.index(v, base, draft, resource, depth + 1)
            elif s == SCHEMAS:
                for it in v.items:
                    self.index(it, base, draft, resource, depth + 1)
            elif s == ITEMS:
                for it in (v.items if v.kind == ARRAY else [v]):
                    self.index(it, base, draft, resource, depth + 1)
            elif s in (SCHEMA_MAP, DEPS):
                for mv in v.values:
                    if mv.kind in (OBJECT, BOOL):
                        self.index(mv, base, draft, resource, depth + 1)

    def resolve_ref(self, n, ref):
        if ref.kind != STRING:
            raise ContractError("$ref must be a string")
        try:
            return self.lookup(n.info.base, ref.value)
        except (ContractError, OSError):
            if ":" not in ref.value and n.info.base != n.doc.url:
                return self.lookup(n.doc.url, ref.value)
            raise

    def lookup(self, base, ref_text):
        doc_url, frag = split_fragment(resolve_uri(base, ref_text))
        root = self.ids.get(doc_url)
        if root is None:
            root = self.load(doc_url).root
            root = self.ids.get(doc_url, root)
        if frag == "":
            target = root
        elif frag.startswith("/"):
            target = root.lookup(frag)
        else:
            target = self.anchors.get(doc_url + "#" + frag)
            if target is None:
                raise ContractError("$ref %r: no schema has anchor %r" % (ref_text, frag))
        if target.kind not in (OBJECT, BOOL):
            raise ContractError("$ref %r points to a non-schema" % ref_text)
        if target.info is None:
            if target.doc.contract:
                raise ContractError("$ref %r points into the contract file outside its schemas" % ref_text)
            d = target.doc.root.info
            self.index(target, doc_url, d.draft if d else D2020, target)
        return target


# ---------------------------------------------------------------- normalise

def copy_value(v, parent, ptr):
    c = Node(v.kind, v.value)
    c.origin, c.root, c.pointer, c.doc = v, parent.root, ptr, v.doc
    for k, mv in zip(v.keys, v.values):
        c.keys.append(k)
        c.values.append(copy_value(mv, c, child(ptr, k)))
    if v.kind == ARRAY:
        c.items = [copy_value(it, c, ptr + "/" + str(i)) for i, it in enumerate(v.items)]
    return c


class Normaliser:
    """Rewrites schemas of any draft into draft 2020-12 with each "$ref"
    resolved to its normalised target (docs/protocol.md, step 2)."""

    def __init__(self, resolver):
        self.r = resolver
        self.copies = {}
        self.pending = []

    def schema(self, src):
        c = self.copies.get(id(src))
        if c is not None:
            return c[1]
        if src.info is not None and src.info.resource is not src:
            self.schema(src.info.resource)
            c = self.copies.get(id(src))
            if c is not None:
                return c[1]
        root = Node(OBJECT)
        self.copies[id(src)] = (src, root)
        self.fill(root, src, root, "", 0)
        while self.pending:
            n = self.pending.pop(0)
            target = self.r.resolve_ref(n.origin, n.origin.get("$ref"))
            n.ref = self.schema(target)
        return root

    def sub(self, s, root, ptr, depth):
        c = Node(OBJECT)
        self.copies[id(s)] = (s, c)
        self.fill(c, s, root, ptr, depth)
        return c

    def fill(self, dst, src, root, ptr, depth):
        dst.origin, dst.root, dst.pointer, dst.doc = src, root, ptr, src.doc
        if depth > 512:
            raise ContractError("schema nested too deep")
        if src.kind == BOOL:
            dst.kind, dst.value = BOOL, src.value
            return
        if src.kind != OBJECT:
            raise ContractError("%s: a schema must be an object or a boolean" % src.pointer)
        dst.kind = OBJECT
        draft = src.info.draft if src.info is not None else D2020
        if src.info is None:
            self.r.index(src, src.doc.url, draft, src)
        ref = src.get("$ref")
        items = src.get("items")

        def add(key, v):
            dst.keys.append(key)
            dst.values.append(v)

        dep_required = dep_schemas = None
        for key, v in zip(src.keys, src.values):
            if ref is not None and draft < D2019 and key != "$ref" and not key.startswith("x-"):
                continue
            if key not in KEYWORDS:
                add(key, copy_value(v, dst, child(ptr, key)))
                continue
            if not in_draft(key, draft) and key not in ("definitions", "$defs"):
                continue
            if key in ("$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary"):
                continue
            if key in ("$recursiveRef", "$dynamicRef"):
                raise ContractError("%s is not supported in contracts: use $ref" % key)
            if key == "$ref":
                if v.kind != STRING:
                    raise ContractError("$ref must be a string")
                add(key, copy_value(v, dst, ptr + "/$ref"))
                self.pending.append(dst)
                continue
            if key in ("exclusiveMinimum", "exclusiveMaximum") and v.kind == BOOL:
                bound = src.get("minimum" if key == "exclusiveMinimum" else "maximum")
                if v.value and bound is not None:
                    add(key, copy_value(bound, dst, ptr + "/" + key))
                continue
            if key in ("minimum", "maximum"):
                ex = src.get("exclusive" + key[0].upper() + key[1:])
                if ex is not None and ex.kind == BOOL and ex.value:
                    continue
            if key == "additionalItems":
                if items is not None and items.kind == ARRAY and draft < D2020:
                    add("items", self.sub(v, root, ptr + "/items", depth + 1))
                continue
            if key == "items" and v.kind == ARRAY:
                arr = Node(ARRAY)
                arr.origin, arr.root, arr.pointer, arr.doc = v, root, ptr + "/prefixItems", v.doc
                arr.items = [self.sub(it, root, arr.pointer + "/" + str(j), depth + 1) for j, it in enumerate(v.items)]
                add("prefixItems", arr)
                continue
            if key in ("dependencies", "dependentRequired", "dependentSchemas"):
                if v.kind != OBJECT:
                    raise ContractError("%s must be an object" % key)
                for name, dv in zip(v.keys, v.values):
                    if dv.kind == ARRAY and key != "dependentSchemas":
                        if dep_required is None:
                            dep_required = Node(OBJECT)
                            dep_required.origin, dep_required.root, dep_required.pointer, dep_required.doc = v, root, ptr + "/dependentRequired", v.doc
                            add("dependentRequired", dep_required)
                        if name in dep_required.keys:
                            # Never merged, and neither wins (docs/protocol.md, step 3).
                            raise ContractError("%r is in both dependencies and dependentRequired" % name)
                        dep_required.keys.append(name)
                        dep_required.values.append(copy_value(dv, dep_required, child(dep_required.pointer, name)))
                    elif key != "dependentRequired":
                        if dep_schemas is None:
                            dep_schemas = Node(OBJECT)
                            dep_schemas.origin, dep_schemas.root, dep_schemas.pointer, dep_schemas.doc = v, root, ptr + "/dependentSchemas", v.doc
                            add("dependentSchemas", dep_schemas)
                        if name in dep_schemas.keys:
                            raise ContractError("%r is in both dependencies and dependentSchemas" % name)
                        dep_schemas.keys.append(name)
                        dep_schemas.values.append(self.sub(dv, root, child(dep_schemas.pointer, name), depth + 1))
                    else:
                        raise ContractError("dependentRequired values are arrays of property names")
                continue
            s = shape(key, D2020)
            if s in (SCHEMA, ITEMS):
                add(key, self.sub(v, root, child(ptr, key), depth + 1))
            elif s == SCHEMAS:
                if v.kind != ARRAY:
                    raise ContractError("%s must be an array of schemas" % key)
                arr = Node(ARRAY)
                arr.origin, arr.root, arr.pointer, arr.doc = v, root, ptr + "/" + key, v.doc
                arr.items = [self.sub(it, root, arr.pointer + "/" + str(j), depth + 1) for j, it in enumerate(v.items)]
                add(key, arr)
            elif s == SCHEMA_MAP:
                if v.kind != OBJECT:
                    raise ContractError("%s must be an object of schemas" % key)
                m = Node(OBJECT)
                m.origin, m.root, m.pointer, m.doc = v, root, child(ptr, key), v.doc
                for name, mv in zip(v.keys, v.values):
                    m.keys.append(name)
                    m.values.append(self.sub(mv, root, child(m.pointer, name), depth + 1))
                add(key, m)
            else:
                add(key, copy_value(v, dst, child(ptr, key)))


# A schema that holds only these besides "$ref" is the schema it refers to.
REF_ANNOTATIONS = {"$ref", "title", "description", "$comment", "examples", "deprecated"}


def chase_refs(n):
    for _ in range(64):
        if n.kind != OBJECT or n.ref is None:
            return n
        if any(k not in REF_ANNOTATIONS for k in n.keys):
            return n
        n = n.ref
    return n


# ---------------------------------------------------------------- bundle

def escape_fragment(p):
    safe = "-._~!$&'()*+,;=:@/"
    out = []
    for b in p.encode("utf-8"):
        c = chr(b)
        if c.isascii() and (c.isalnum() or c in safe):
            out.append(c)
        else:
            out.append("%%%02X" % b)
    return "".join(out)


def sanitise_name(s):
    s = re.sub(r"[^A-Za-z0-9_.-]+", "_", s)
    return s or "schema"


def def_name(target):
    src = target.source()
    tokens = src.pointer.split("/")
    if len(tokens) >= 3 and tokens[-2] in ("$defs", "definitions"):
        return sanitise_name(tokens[-1].replace("~1", "/").replace("~0", "~"))
    if src.doc is not None and src.doc.contract and len(tokens) == 3 and tokens[1] == "schemas":
        return sanitise_name(tokens[2].replace("~1", "/").replace("~0", "~"))
    if src.pointer == "" and src.doc is not None:
        base = urllib.parse.urlparse(src.doc.url).path.rsplit("/", 1)[-1]
        base = urllib.parse.unquote(base)
        for ext in (".json", ".yaml", ".yml", ".schema"):
            if base.endswith(ext):
                base = base[: -len(ext)]
        return sanitise_name(base)
    return sanitise_name(".".join(tokens[1:]))


class Bundler:
    """Makes one message's self-contained document (docs/protocol.md, step 3).
    Bundled values are plain Python values: dicts (ordered), lists, str,
    bool, None and Number."""

    def __init__(self, root):
        self.root = root
        self.defs = {}
        self.names = set()
        self.out = []
        self.keys = []
        d = root.get("$defs")
        if d is not None:
            self.names.update(d.keys)

    def within(self, target):
        return target.root is self.root.root and (
            target.pointer == self.root.pointer or target.pointer.startswith(self.root.pointer + "/"))

    def ref_text(self, target):
        target = chase_refs(target)
        if self.within(target):
            return "#" + escape_fragment(target.pointer[len(self.root.pointer):])
        name = self.defs.get(id(target))
        if name is None:
            base = def_name(target)
            name, i = base, 2
            while name in self.names:
                name = "%s_%d" % (base, i)
                i += 1
            self.names.add(name)
            self.defs[id(target)] = name
            self.keys.append(name)
            self.out.append(target)
        return "#/$defs/" + escape_fragment(escape_token(name))

    def copy(self, n):
        if n.kind != OBJECT:
            return plain(n)
        out = {}
        for key, v in zip(n.keys, n.values):
            if key.startswith("x-go-"):
                continue
            if key == "$ref" and n.ref is not None:
                out[key] = self.ref_text(n.ref)
            elif key not in KEYWORDS:
                out[key] = plain(v)
            else:
                s = shape(key, D2020)
                if s in (SCHEMA, ITEMS):
                    out[key] = self.copy(v)
                elif s == SCHEMAS:
                    out[key] = [self.copy(it) for it in v.items]
                elif s == SCHEMA_MAP:
                    out[key] = {k: self.copy(mv) for k, mv in zip(v.keys, v.values)}
                else:
                    out[key] = plain(v)
        return out

    def bundle(self, case_insensitive):
        doc = self.copy(self.root)
        i = 0
        while i < len(self.out):
            self.out[i] = self.copy(self.out[i])
            i += 1
        if not isinstance(doc, dict):
            return doc
        head = {"$schema": DRAFT2020_URL}
        if case_insensitive:
            head[CASE_INSENSITIVE_KEY] = True
        for k, v in doc.items():
            if k not in ("$schema", CASE_INSENSITIVE_KEY):
                head[k] = v
        if self.out:
            defs = head.setdefault("$defs", {})
            for name, d in zip(self.keys, self.out):
                defs[name] = d
        return head


def plain(n):
    """The JSON value of a node, as Python values."""
    if n.kind == NULL:
        return None
    if n.kind in (BOOL, NUMBER, STRING):
        return n.value
    if n.kind == ARRAY:
        return [plain(it) for it in n.items]
    return {k: plain(v) for k, v in zip(n.keys, n.values)}


# ---------------------------------------------------------------- canonical form

ANNOTATIONS = {"title", "description", "examples", "$comment"}
STRIP_ONE = {"not", "if", "then", "else", "additionalProperties", "additionalItems", "contains",
             "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
STRIP_ARRAY = {"prefixItems", "allOf", "anyOf", "oneOf"}
STRIP_MAP = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}


def strip_annotations(schema):
    """docs/protocol.md, step 4: annotations go wherever a schema sits."""
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k in ANNOTATIONS:
            continue
        if k in STRIP_ONE:
            v = strip_annotations(v)
        elif k in STRIP_ARRAY:
            v = [strip_annotations(e) for e in v] if isinstance(v, list) else v
        elif k in STRIP_MAP:
            v = {n: strip_annotations(m) for n, m in v.items()} if isinstance(v, dict) else v
        elif k == "items":
            v = [strip_annotations(e) for e in v] if isinstance(v, list) else strip_annotations(v)
        elif k == "dependencies":
            v = {n: (m if isinstance(m, list) else strip_annotations(m)) for n, m in v.items()} if isinstance(v, dict) else v
        out[k] = v
    return out


def es_number(x):
    """A double in its ECMAScript Number.prototype.toString form (RFC 8785 3.2.2.3)."""
    if x != x or x in (float("inf"), float("-inf")):
        raise ContractError("%r has no JSON form" % x)
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    r = repr(abs(x))
    mantissa, _, exp = r.partition("e")
    exp = int(exp) if exp else 0
    if "." in mantissa:
        whole, frac = mantissa.split(".")
    else:
        whole, frac = mantissa, ""
    digits = (whole + frac).lstrip("0")
    # value = 0.digits * 10^n
    n = len(whole) + exp if whole != "0" else exp - (len(frac) - len(frac.lstrip("0")))
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    es = ("+" if e >= 0 else "-") + str(abs(e))
    if k == 1:
        return sign + digits + "e" + es
    return sign + digits[0] + "." + digits[1:] + "e" + es


def es_string(s):
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20:
            out.append({8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}.get(o, "\\u%04x" % o))
        elif 0xD800 <= o <= 0xDFFF:
            raise ContractError("string with a lone surrogate")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def jcs(value):
    """RFC 8785 serialisation of a Python JSON value."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, Number):
        return es_number(value.value)
    if isinstance(value, (int, float)):
        return es_number(float(value))
    if isinstance(value, str):
        return es_string(value)
    if isinstance(value, list):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(es_string(k) + ":" + jcs(value[k]) for k in keys) + "}"
    raise ContractError("unexpected value %r" % (value,))


# ---------------------------------------------------------------- contracts

def find(path):
    if os.path.isdir(path):
        for name in FILE_NAMES:
            p = os.path.join(path, name)
            if os.path.exists(p):
                return p
        raise ContractError("no contract file in %s" % path)
    return path


def _str(obj, key, required, default=""):
    v = obj.get(key)
    if v is None:
        if required:
            raise ContractError("%s is required" % key)
        return default
    if v.kind != STRING:
        raise ContractError("%s must be a string" % key)
    return v.value


def _bool(obj, key):
    v = obj.get(key)
    if v is None:
        return False
    if v.kind != BOOL:
        raise ContractError("%s must be true or false" % key)
    return v.value


def _selectors(topic):
    """A topic's selectors, a set: sorted by UTF-16 code units, as RFC 8785
    sorts member names."""
    v = topic.get("selectors")
    if v is None:
        return []
    if v.kind != ARRAY or any(it.kind != STRING for it in v.items):
        raise ContractError("selectors must be a list of field names")
    return sorted((it.value for it in v.items), key=lambda s: s.encode("utf-16-be"))


def load(path):
    """The wire model of a contract file: the document the canonical form
    is built from, with each schema bundled (before annotation stripping)."""
    path = os.path.abspath(find(path))
    with open(path, encoding="utf-8") as f:
        root = parse_file(path, f.read())
    if root.kind != OBJECT:
        raise ContractError("a contract file must hold an object")
    r = Resolver()
    doc = Document(file_url(path), root, contract=True)
    set_pointers(root, doc, "")
    r.docs[doc.url] = doc
    contract_ci = _bool(root, CASE_INSENSITIVE_KEY)
    schemas = root.get("schemas")
    if schemas is None or schemas.kind != OBJECT:
        raise ContractError("schemas must be an object of message name to schema")
    for name, src in zip(schemas.keys, schemas.values):
        if src.kind not in (OBJECT, BOOL):
            raise ContractError("schema of %s must be an object or a boolean" % name)
        draft = D2020
        if src.get("$schema") is not None:
            draft = draft_of(src.get("$schema"))
        r.index(src, doc.url, draft, src)
    z = Normaliser(r)
    bundles = {}
    for name, src in sorted(zip(schemas.keys, schemas.values), key=lambda e: e[0]):
        norm = chase_refs(z.schema(src))
        ci = contract_ci
        flag = src.get(CASE_INSENSITIVE_KEY)
        if flag is not None:
            if flag.kind != BOOL:
                raise ContractError("%s must be true or false" % CASE_INSENSITIVE_KEY)
            ci = flag.value
        bundles[name] = (norm, ci)
    out_schemas = {name: Bundler(norm).bundle(ci) for name, (norm, ci) in bundles.items()}

    methods = {}
    m = root.get("methods")
    if m is not None and m.kind != OBJECT:
        raise ContractError("methods must be an object of method name to declaration")
    if m is not None:
        for name, d in zip(m.keys, m.values):
            methods[name] = {
                "request": _str(d, "request", True), "response": _str(d, "response", True),
                "idempotent": _bool(d, "idempotent"), "batch": _bool(d, "batch"),
                "path": _str(d, "path", False),
            }
    topics = {}
    t = root.get("topics")
    if t is not None and t.kind != OBJECT:
        raise ContractError("topics must be an object of topic name to declaration")
    if t is not None:
        for name, d in zip(t.keys, t.values):
            topics[name] = {
                "object": _str(d, "object", True), "key": _str(d, "key", True),
                "writer": _str(d, "writer", True), "lostWriter": _str(d, "lostWriter", True),
            }
            selectors = _selectors(d)
            if selectors:
                topics[name]["selectors"] = selectors
    version = root.get("version")
    if version is None or version.kind != STRING:
        raise ContractError('version must be a string such as "2.0.0"')
    return {
        "contract": _str(root, "contract", True),
        "version": version.value,
        "server": _str(root, "server", True),
        "client": _str(root, "client", True),
        "methods": methods,
        "topics": topics,
        "schemas": out_schemas,
    }


def canonical(wire):
    """The canonical bytes of a wire model (as load returns it)."""
    doc = dict(wire)
    doc["schemas"] = {n: strip_annotations(s) for n, s in wire["schemas"].items()}
    return jcs(doc).encode("utf-8")


def fingerprint_of(canonical_bytes):
    return PREFIX + hashlib.sha256(canonical_bytes).hexdigest()


def fingerprint(path):
    """The lsfp1 fingerprint of the contract file (or folder) at path."""
    return fingerprint_of(canonical(load(path)))


def main(argv):
    """Prints "<fingerprint> <path>" for each contract folder or file named,
    and with --canonical the canonical bytes before each."""
    show = "--canonical" in argv
    paths = [a for a in argv if a != "--canonical"]
    if not paths or paths[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 2
    status = 0
    for path in paths:
        try:
            c = canonical(load(path))
        except (ContractError, yamlsubset.YAMLError, OSError) as e:
            print("error %s: %s" % (path, e), file=sys.stderr)
            status = 1
            continue
        if show:
            sys.stdout.buffer.write(c + b"\n")
        print(fingerprint_of(c), path, flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
