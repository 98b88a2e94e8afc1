"""The CUDA source model: what the advisor's fixes and scanners need to know about a .cu file.

One parse per text (tree-sitter with the tree-sitter-cuda grammar, cached by the
text's hash), and the facts read from the syntax tree, never from regular
expressions: a loop is a ``for_statement`` whose body the grammar delimits (a
``for`` in a comment, a string or a macro is none), a double literal is a
``number_literal`` token (``2.0`` in ``"2.0"`` or ``// 2.0`` is none), a pointer
parameter is a ``pointer_declarator`` with its qualifiers as the grammar reads
them, a launch is a call with ``<<<...>>>``.  Regular expressions had to guess
where statements, parameter lists and bodies end; the tree says.

Positions are 0-based ``(line, character)``: tree-sitter counts columns in
UTF-8 bytes, the model converts them to characters (Python string indices) so
that a non-ASCII comment before a token does not shift an edit.  Lines are the
text split at ``\\n`` (tree-sitter's rows).

Every fact carries ``has_error``: the grammar recovered from a syntax error in
or around it (an ERROR or MISSING node).  Fixes refuse such targets rather than
guess; the scanners used by the analysis still report them.

A function is looked up by :func:`gpa_lsp.profile.demangle.bare_name`, the C++
identifier of a mangled or demangled name, so that a fix can find the function
a SASS symbol names.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

import tree_sitter
import tree_sitter_cuda

from .frozen import frozen_new
from .profile.demangle import bare_name

Pos = tuple[int, int]          # 0-based (line, character)

_LANGUAGE = tree_sitter.Language(tree_sitter_cuda.language())
_LOCAL = threading.local()     # a Parser is not thread safe: one per thread


def _parser() -> tree_sitter.Parser:
    p = getattr(_LOCAL, "parser", None)
    if p is None:
        p = _LOCAL.parser = tree_sitter.Parser(_LANGUAGE)
    return p


# ---- facts -------------------------------------------------------------------------

@dataclass(frozen=True)
class Token:
    """A piece of source text and where it is (``end`` exclusive)."""
    text: str
    start: Pos
    end: Pos


@dataclass(frozen=True)
class Literal(Token):
    """A floating literal without an ``f``/``F`` suffix: a double."""


@dataclass(frozen=True)
class Parameter:
    name: str | None           # None in a declaration that names no parameter
    index: int
    start: Pos                 # the whole parameter declaration
    end: Pos
    text: str
    type: str                  # the type specifier's text (``float``, ``T``, ``unsigned int``)
    pointer: int = 0           # levels of ``*`` (0: not a pointer)
    const: bool = False        # the pointee is const (``const T*`` or ``T const*``)
    pointer_const: bool = False  # ``T* const p``
    restrict: bool = False     # ``__restrict__``, ``__restrict`` or ``restrict`` on the pointer
    volatile: bool = False
    prefix: str = ""           # the text before the declarator: the type with its qualifiers as written
    default: bool = False      # has a default argument


@dataclass(frozen=True)
class Function:
    name: str
    line: int                  # line of the name
    start: Pos                 # the definition (or declaration), specifiers included
    end: Pos
    specifiers: tuple[Token, ...]   # __global__, __device__, __host__, __forceinline__, inline, static, ...
    parameters: tuple[Parameter, ...]
    body: Token | None         # the ``{...}`` of a definition; None for a declaration
    has_error: bool = False

    @property
    def kernel(self) -> bool:
        return any(t.text == "__global__" for t in self.specifiers)

    @property
    def device(self) -> bool:
        return any(t.text == "__device__" for t in self.specifiers)

    def parameter(self, name: str) -> Parameter | None:
        return next((p for p in self.parameters if p.name == name), None)

    @property
    def inline_specifier(self) -> Token | None:
        """``__forceinline__``, ``__noinline__``, ``__inline__`` or ``inline``, when written."""
        return next((t for t in self.specifiers if t.text in _INLINE_WORDS), None)


@dataclass(frozen=True)
class Pragma(Token):
    """A ``#pragma unroll ...`` line before a loop (text stripped)."""


@dataclass(frozen=True)
class Loop:
    kind: str                  # "for" | "while" | "do"
    line: int                  # line of the keyword (the header)
    start: Pos                 # the keyword
    end: Pos                   # end of the whole statement
    body_start: Pos
    body_end: Pos
    pragma: Pragma | None      # the ``#pragma unroll`` right before it (comments between allowed)
    first_on_line: bool        # nothing but blanks before the keyword on its line
    has_error: bool = False


@dataclass(frozen=True)
class Argument(Token):
    kind: str = ""             # the grammar's node type: number_literal, identifier, binary_expression, ...


@dataclass(frozen=True)
class Launch:
    kernel: str
    line: int                  # line of ``<<<``
    start: Pos                 # the whole call
    end: Pos
    config: tuple[Argument, ...]   # grid, block[, shared bytes[, stream]]
    has_error: bool = False

    @property
    def grid(self) -> Argument | None:
        return self.config[0] if self.config else None

    @property
    def block(self) -> Argument | None:
        return self.config[1] if len(self.config) > 1 else None


@dataclass(frozen=True)
class Dim3:
    """``dim3 NAME(a, b, c)`` / ``dim3 NAME{a, b}`` / ``dim3 NAME = dim3(...)``; dims None where not an integer literal."""
    name: str
    line: int
    args: tuple[Argument, ...]
    dims: tuple[int | None, ...]

    @property
    def literal(self) -> bool:
        return bool(self.dims) and all(d is not None for d in self.dims)

    @property
    def threads(self) -> int | None:
        if not self.literal:
            return None
        n = 1
        for d in self.dims:
            n *= d
        return n


# ---- the model -----------------------------------------------------------------------

_LOOPS = {"for_statement": "for", "for_range_loop": "for", "while_statement": "while", "do_statement": "do"}
_STATEMENTS = frozenset({
    "expression_statement", "declaration", "return_statement", "if_statement", "switch_statement",
    "for_statement", "for_range_loop", "while_statement", "do_statement", "case_statement",
    "labeled_statement", "break_statement", "continue_statement", "goto_statement", "field_declaration",
    "throw_statement", "co_return_statement", "co_yield_statement",
})
_DECLARATORS = frozenset({"pointer_declarator", "array_declarator", "reference_declarator", "function_declarator",
                          "parameter_declaration", "optional_parameter_declaration", "abstract_pointer_declarator"})
_INDEXED = frozenset({"number_literal", "preproc_arg", "identifier", "function_definition", "declaration",
                       "field_declaration", "kernel_call_syntax", *_LOOPS})
_INLINE_WORDS = ("__forceinline__", "__noinline__", "__inline__", "inline")
_RESTRICT = frozenset({"__restrict__", "__restrict", "restrict"})
_CASTS = frozenset({"reinterpret_cast", "static_cast", "const_cast"})
_READ_ONLY_CALLS = re.compile(r"^__ld\w*$")     # __ldg, __ldcg, __ldcs, ...: loads through the pointer
_INT = re.compile(r"^(\d+)[uU]?$")


_DEC_DOUBLE = re.compile(r"^(?:\d+\.\d*|\.\d+|\d+(?=e))(?:e[+-]?\d+)?$")
_HEX_DOUBLE = re.compile(r"^0x(?:[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)p[+-]?\d+$")


def _is_double(text: str) -> bool:
    """A floating literal with no suffix (``2.0``, ``1e-3``, ``.5``, ``1.``, ``0x1p3``), i.e. of type double."""
    t = text.replace("'", "").lower()
    return bool(_DEC_DOUBLE.match(t) or _HEX_DOUBLE.match(t))


def double_literal_ending(text: str) -> tuple[str, int] | None:
    """``(literal, start column)`` of the double literal that ends ``text`` (the longest suffix that
    is one, by the same test as ``double_literals``), or None: where a float-literal fix's ``f`` goes
    after it, for the sentence that quotes the literal on a line of text."""
    return next(((text[i:], i) for i in range(len(text)) if _is_double(text[i:])), None)


def integer_literal(text: str) -> int | None:
    """The value of a decimal integer literal (``256``, ``128u``); None for anything else."""
    m = _INT.match(text.strip())
    return int(m.group(1)) if m else None


class CudaSource:
    """One parsed text. Build with :func:`parse` (cached) rather than directly."""

    def __init__(self, text: str):
        self.text = text
        self._data = text.encode("utf-8", "surrogatepass")
        self.tree = _parser().parse(self._data)
        self.root = self.tree.root_node
        self.lines = text.split("\n")
        self._blines = self._data.split(b"\n")

    # -- positions --------------------------------------------------------------------

    def pos(self, point) -> Pos:
        """A tree-sitter point (row, byte column) -> (line, character)."""
        row, col = point[0], point[1]
        if row >= len(self._blines):
            return row, col
        b = self._blines[row]
        if col == 0 or b.isascii():
            return row, col
        return row, len(b[:col].decode("utf-8", "replace"))

    def point(self, pos: Pos) -> tuple[int, int]:
        """(line, character) -> tree-sitter point (row, byte column)."""
        row, col = pos
        if row >= len(self.lines):
            return row, col
        s = self.lines[row]
        if s.isascii():
            return row, col
        return row, len(s[:col].encode("utf-8", "surrogatepass"))

    def node_text(self, node) -> str:
        return self._data[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def token(self, node, cls=Token, **extra) -> Token:
        return cls(self.node_text(node), self.pos(node.start_point), self.pos(node.end_point), **extra)

    def line_text(self, line: int) -> str:
        return self.lines[line].rstrip("\r") if 0 <= line < len(self.lines) else ""

    @property
    def has_error(self) -> bool:
        return self.root.has_error

    @cached_property
    def _bad(self) -> tuple[tuple[int, int, int, int], ...]:
        """(bytes, rows) of ERROR and MISSING nodes, less the MISSING body of a loop followed by a pragma."""
        out = []
        stack = [self.root] if self.root.has_error else []
        while stack:
            n = stack.pop()
            if n.is_error or (n.is_missing and not self._benign_missing(n)):
                out.append((n.start_byte, n.end_byte, n.start_point[0], n.end_point[0]))
                continue
            stack.extend(c for c in n.children if c.has_error or c.is_missing)
        return tuple(out)

    def _benign_missing(self, n) -> bool:
        """The grammar's MISSING ``;`` for a loop body that a ``#pragma`` line separates from its header."""
        stmt = n.parent
        loop = stmt.parent if stmt is not None else None
        return (stmt is not None and stmt.type == "expression_statement" and stmt.start_byte == stmt.end_byte
                and loop is not None and loop.type in _LOOPS and loop.child_by_field_name("body") == stmt
                and self._repaired_body(loop, stmt)[1])

    def erroneous(self, node) -> bool:
        """The node holds an ERROR/MISSING node, shares a line with one, or sits inside an ERROR node."""
        if node.is_error or (node.is_missing and not self._benign_missing(node)):
            return True
        a, b, r1, r2 = node.start_byte, node.end_byte, node.start_point[0], node.end_point[0]
        if any((a <= s and e <= b) or (sr <= r2 and r1 <= er) for s, e, sr, er in self._bad):
            return True
        p = node.parent
        while p is not None:
            if p.is_error:
                return True
            p = p.parent
        return False

    @cached_property
    def _index(self) -> dict[str, list]:
        """The nodes the facts are read from, by type, in source order (one walk of the tree)."""
        out: dict[str, list] = {t: [] for t in _INDEXED}
        cursor = self.root.walk()
        while True:
            node = cursor.node
            if node.type in out:
                out[node.type].append(node)
            if cursor.goto_first_child():
                continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    return out

    def _walk(self, types) -> list:
        """Nodes of the given (indexed) types, in source order."""
        got = [n for t in types for n in self._index[t]]
        return sorted(got, key=lambda n: n.start_byte) if len(types) > 1 else got

    def node_at(self, pos: Pos):
        pt = self.point(pos)
        return self.root.descendant_for_point_range(pt, pt)

    # -- double literals -------------------------------------------------------------------

    @cached_property
    def _macros(self) -> tuple[tuple["CudaSource", int, int], ...]:
        """Macro bodies (``#define`` values are not parsed with the file), each parsed alone: (model, line, column)."""
        out = []
        for n in self._walk({"preproc_arg"}):
            if n.parent is not None and n.parent.type in ("preproc_def", "preproc_function_def"):
                r, c = self.pos(n.start_point)
                out.append((parse(self.node_text(n)), r, c))
        return tuple(out)

    @staticmethod
    def _shift(pos: Pos, r: int, c: int) -> Pos:
        return (pos[0] + r, pos[1] + (c if pos[0] == 0 else 0))

    @cached_property
    def _doubles(self) -> tuple[Literal, ...]:
        out: list[Literal] = []
        for n in self._walk({"number_literal"}):
            if n.parent is not None and n.parent.type == "user_defined_literal":
                continue
            t = self.node_text(n)
            sign = len(t) - len(t.lstrip("+-"))        # the grammar lexes ``-1.0`` as one literal
            if _is_double(t[sign:]):
                (r, c), end = self.pos(n.start_point), self.pos(n.end_point)
                out.append(Literal(t[sign:], (r, c + sign), end))
        for sub, r, c in self._macros:
            out += [Literal(l.text, self._shift(l.start, r, c), self._shift(l.end, r, c)) for l in sub._doubles]
        return tuple(sorted(out, key=lambda l: l.start))

    def double_literals(self, start: Pos | None = None, end: Pos | None = None) -> list[Literal]:
        """Double literals (floating, no ``f``/``F``/``l``/``L`` suffix) inside [start, end); all without bounds."""
        return [l for l in self._doubles
                if (start is None or l.start >= start) and (end is None or l.end <= end)]

    def literals_in(self, node) -> list[Literal]:
        """Double literals inside a syntax node (e.g. ``statement_node``'s)."""
        return self.double_literals(self.pos(node.start_point), self.pos(node.end_point))

    def literals_on_line(self, line: int) -> list[Literal]:
        return [l for l in self._doubles if l.start[0] == line]

    def literal_at(self, line: int, start: int, end: int) -> Literal | None:
        """The double literal exactly at columns [start, end) of ``line`` (a suffixed or partial one is None)."""
        return next((l for l in self._doubles if l.start == (line, start) and l.end == (line, end)), None)

    # -- statements --------------------------------------------------------------------

    def statement_node(self, pos: Pos):
        """The innermost statement (or declaration) holding ``pos``; a for-loop's initializer gives the loop."""
        n = self.node_at(pos)
        while n is not None and n.type not in _STATEMENTS:
            n = n.parent
        if n is not None and n.type == "declaration" and n.parent is not None and n.parent.type in _LOOPS:
            n = n.parent
        return n

    def enclosing_statement(self, pos: Pos) -> Token | None:
        n = self.statement_node(pos)
        return None if n is None or self.erroneous(n) else self.token(n)

    def condition_of(self, statement_start: Pos) -> Token | None:
        """The condition of the if/switch statement starting at ``statement_start``."""
        n = self.node_at(statement_start)
        while n is not None and n.type not in ("if_statement", "switch_statement"):
            n = n.parent
        c = n.child_by_field_name("condition") if n is not None else None
        return self.token(c) if c is not None else None

    # -- loops -----------------------------------------------------------------------------

    def _pragma_before(self, node):
        p = node.prev_named_sibling
        while p is not None and p.type == "comment":
            p = p.prev_named_sibling
        if p is not None and p.type == "preproc_call":
            d = p.child_by_field_name("directive")
            a = p.child_by_field_name("argument")
            if d is not None and self.node_text(d) == "#pragma" and a is not None \
                    and re.match(r"unroll\b", self.node_text(a).strip()):
                t = self.node_text(p).strip()
                return frozen_new(Pragma, text=t, start=self.pos(p.start_point),
                                  end=(p.start_point[0], len(self.line_text(p.start_point[0]))))
        return None

    def _repaired_body(self, node, body):
        """A ``#pragma`` between a loop's header and its braceless body breaks the grammar (the
        body comes out MISSING): the statement after the pragma is the body."""
        if body is None or not (body.type == "expression_statement" and body.start_byte == body.end_byte):
            return body, False
        nxt = node.next_named_sibling
        while nxt is not None and nxt.type in ("comment", "preproc_call"):
            nxt = nxt.next_named_sibling
        if nxt is None or nxt.type not in _STATEMENTS and nxt.type != "compound_statement":
            return body, False
        return nxt, True

    @cached_property
    def loops(self) -> tuple[Loop, ...]:
        out = []
        for n in self._walk(_LOOPS):
            kw = n.children[0]
            body, repaired = self._repaired_body(n, n.child_by_field_name("body"))
            if body is None:
                continue
            start = self.pos(kw.start_point)
            end_node = body if repaired else n
            err = self.erroneous(n) or (repaired and self.erroneous(body))
            # Loop(...) through frozen_new (gpa_lsp/frozen.py): one per loop, 10^3 in a large file
            out.append(frozen_new(Loop, kind=_LOOPS[n.type], line=start[0], start=start,
                                  end=self.pos(end_node.end_point), body_start=self.pos(body.start_point),
                                  body_end=self.pos(body.end_point), pragma=self._pragma_before(n),
                                  first_on_line=not self.line_text(start[0])[:start[1]].strip(), has_error=err))
        for sub, r, c in self._macros:
            sh = self._shift
            out += [Loop(lp.kind, lp.line + r, sh(lp.start, r, c), sh(lp.end, r, c), sh(lp.body_start, r, c),
                         sh(lp.body_end, r, c), None, False, True) for lp in sub.loops]
        return tuple(sorted(out, key=lambda lp: lp.start))

    def loop_at(self, line: int) -> Loop | None:
        """The (outermost) loop whose keyword is on ``line``."""
        return next((lp for lp in self.loops if lp.line == line), None)

    def loops_around(self, line: int) -> list[Loop]:
        """Loops whose header or body holds ``line``, outermost first."""
        got = [lp for lp in self.loops if lp.line <= line <= lp.body_end[0]]
        return sorted(got, key=lambda lp: (lp.start, tuple(-x for x in lp.end)))

    def indent(self, line: int) -> str:
        t = self.line_text(line)
        return t[:len(t) - len(t.lstrip())]

    # -- functions ---------------------------------------------------------------------------

    def _function_declarator(self, node):
        d = node.child_by_field_name("declarator")
        while d is not None and d.type != "function_declarator":
            d = d.child_by_field_name("declarator")
        return d

    def _function(self, node) -> Function | None:
        fd = self._function_declarator(node)
        if fd is None:
            return None
        name_node = fd.child_by_field_name("declarator")
        if name_node is None:
            return None
        if name_node.type in ("qualified_identifier", "template_function"):
            inner = name_node
            while inner is not None and inner.type in ("qualified_identifier", "template_function"):
                inner = inner.child_by_field_name("name")
            name_node = inner if inner is not None else name_node
        name = self.node_text(name_node).split("::")[-1].split("<")[0].strip()
        specs = []
        for c in node.children:
            if c.type in ("__global__", "__device__", "__host__", "__forceinline__", "__noinline__",
                          "storage_class_specifier", "launch_bounds"):
                specs.append(self.token(c))
            elif c == node.child_by_field_name("declarator"):
                break
        params = []
        plist = fd.child_by_field_name("parameters")
        if plist is not None:
            for i, p in enumerate(c for c in plist.named_children
                                  if c.type in ("parameter_declaration", "optional_parameter_declaration")):
                params.append(self._parameter(p, i))
        body = node.child_by_field_name("body") if node.type == "function_definition" else None
        start = node
        if node.parent is not None and node.parent.type == "template_declaration":
            start = node.parent
        return Function(name, self.pos(name_node.start_point)[0], self.pos(start.start_point),
                        self.pos(node.end_point), tuple(specs), tuple(params),
                        self.token(body) if body is not None else None, self.erroneous(node))

    def _parameter(self, p, index: int) -> Parameter:
        type_node = p.child_by_field_name("type")
        const = volatile = False
        for c in p.children:
            if c.type == "type_qualifier":
                q = self.node_text(c)
                const |= q == "const"
                volatile |= q == "volatile"
        d = p.child_by_field_name("declarator")
        levels = 0
        pconst = restrict = False
        name = None
        while d is not None:
            if d.type in ("pointer_declarator", "abstract_pointer_declarator"):
                levels += 1
                if levels == 1:
                    for c in d.children:
                        if c.type == "type_qualifier":
                            q = self.node_text(c)
                            pconst |= q == "const"
                            restrict |= q in _RESTRICT
                        elif c.type == "ms_pointer_modifier":
                            restrict |= self.node_text(c).strip() in _RESTRICT
                d = d.child_by_field_name("declarator")
            elif d.type == "identifier":
                name = self.node_text(d)
                break
            else:
                inner = d.child_by_field_name("declarator")
                if inner is None:
                    ident = next((c for c in d.named_children if c.type == "identifier"), None)
                    name = self.node_text(ident) if ident is not None else None
                    break
                d = inner
        top = p.child_by_field_name("declarator")
        prefix = self._data[p.start_byte:top.start_byte if top is not None else p.end_byte].decode("utf-8", "replace")
        return Parameter(name, index, self.pos(p.start_point), self.pos(p.end_point), self.node_text(p),
                         self.node_text(type_node) if type_node is not None else "", levels, const, pconst,
                         restrict, volatile, prefix, p.type == "optional_parameter_declaration")

    @cached_property
    def functions(self) -> tuple[Function, ...]:
        """Function definitions, in source order."""
        return tuple(f for f in (self._function(n) for n in self._walk({"function_definition"})) if f is not None)

    @cached_property
    def declarations(self) -> tuple[Function, ...]:
        """Function declarations that are not definitions (prototypes), in source order."""
        out = []
        for n in self._walk({"declaration", "field_declaration"}):
            if self._function_declarator(n) is not None:
                f = self._function(n)
                if f is not None:
                    out.append(f)
        return tuple(out)

    def function(self, name: str, near: int | None = None, *, kernel_or_device: bool = True) -> Function | None:
        """The definition of ``name`` (a bare or mangled name), nearest to line ``near`` when several."""
        bare = bare_name(name)
        found = [f for f in self.functions if f.name == bare and (not kernel_or_device or f.kernel or f.device)]
        if not found:
            return None
        if near is None:
            return found[0]
        return min(found, key=lambda f: abs(f.line - near))

    def function_at(self, line: int) -> Function | None:
        """The innermost definition whose text holds ``line``."""
        got = [f for f in self.functions if f.start[0] <= line <= f.end[0]]
        return max(got, key=lambda f: f.start) if got else None

    # -- writes through a pointer -------------------------------------------------------------

    def written_through(self, name: str, start: Pos, end: Pos) -> bool:
        """Whether pointer ``name`` is stored through, or handed on where it may be, in [start, end).

        Stored: ``name[i] = ...`` (any assignment operator), ``*name = ``, ``name->f = ``, ``++name[i]``,
        an ``atomic*`` call on it, a non-const reference bound to an element; a cast of it is followed
        (``reinterpret_cast<float4*>(p)[i] = v`` stores through ``p``). Handed on (counts as written,
        since a const pointer would not compile or alias there): passed to a call other than the
        ``__ldg`` family or a function of this file taking a pointer to const, or copied into a
        variable that is not a pointer to const.
        """
        for n in self._identifiers(name):
            p = self.pos(n.start_point)
            if start <= p < end and self._pointer_use_writes(n):
                return True
        return False

    def derived_pointers(self, name: str, start: Pos, end: Pos) -> tuple[str, ...]:
        """Local variables initialised from pointer ``name`` in [start, end), transitively.

        ``const float* x = in + size_t(r) * cols;`` makes ``x`` a view of ``in``: a hot line that
        reads ``x[i]`` reads through ``in``, and a change to ``in``'s declaration (``__restrict__``)
        is what reaches those loads. Followed: ``+``/``-`` offsets, parentheses and casts between
        the name and the declaration's initialiser; nothing else (an assignment after the
        declaration, a pointer taken from a struct, is not followed).
        """
        seen: list[str] = []
        todo = [name]
        while todo:
            cur = todo.pop()
            for n in self._identifiers(cur):
                if not start <= self.pos(n.start_point) < end:
                    continue
                got = self._initialised_name(n)
                if got and got != name and got not in seen:
                    seen.append(got)
                    todo.append(got)
        return tuple(seen)

    def _cast_call(self, call) -> bool:
        fn = call.child_by_field_name("function") if call is not None else None
        return (fn is not None and fn.type == "template_function"
                and self.node_text(fn).split("::")[-1].split("<")[0].strip() in _CASTS)

    def _initialised_name(self, e) -> str | None:
        """The variable a pointer expression ``e`` initialises (through offsets and casts), if any."""
        p = e.parent
        while p is not None:
            if p.type in ("parenthesized_expression", "cast_expression") or (
                    p.type == "binary_expression" and self._op(p) in ("+", "-")):
                e, p = p, p.parent
            elif p.type == "argument_list" and self._cast_call(p.parent):
                e, p = p.parent, p.parent.parent          # reinterpret_cast<const float4*>(x + 4)
            else:
                break
        if p is None or p.type != "init_declarator" or p.child_by_field_name("value") != e:
            return None
        d = p.child_by_field_name("declarator")
        while d is not None and d.type != "identifier":
            d = d.child_by_field_name("declarator")
        return self.node_text(d) if d is not None else None

    def _identifiers(self, name: str):
        key = name.encode()
        return [n for n in self._identifier_nodes if self._data[n.start_byte:n.end_byte] == key]

    @cached_property
    def _identifier_nodes(self):
        """Identifiers used in expressions (not the names that declarations introduce)."""
        out = []
        for n in self._walk({"identifier"}):
            p = n.parent
            if p is None or p.type in _DECLARATORS or (
                    p.type in ("init_declarator", "declaration") and p.child_by_field_name("declarator") == n):
                continue
            out.append(n)
        return out

    def _op(self, node) -> str:
        o = node.child_by_field_name("operator")
        return self.node_text(o) if o is not None else ""

    def _pointer_use_writes(self, e) -> bool:
        p = e.parent
        while p is not None and (p.type == "parenthesized_expression"
                                 or (p.type == "binary_expression" and self._op(p) in ("+", "-"))):
            e, p = p, p.parent
        if p is None:
            return True
        if p.type == "subscript_expression" and p.child_by_field_name("argument") == e:
            return self._element_written(p)
        if p.type == "pointer_expression" and self._op(p) == "*":
            return self._element_written(p)
        if p.type == "field_expression" and p.child_by_field_name("argument") == e:
            return self._element_written(p) if self._op(p) == "->" else False
        if p.type == "argument_list":
            call = p.parent
            fn = call.child_by_field_name("function") if call is not None else None
            fname = self.node_text(fn).split("::")[-1] if fn is not None else ""
            if _READ_ONLY_CALLS.match(fname):
                return False
            if fn is not None and fn.type == "template_function" and fname.split("<")[0].strip() in _CASTS:
                return self._pointer_use_writes(call)    # the cast's value is the pointer: follow it
            # a function of this file that takes a pointer to const at that position only reads
            index = [c for c in p.named_children if c.type != "comment"].index(e)
            callees = [f for f in self.functions + self.declarations if f.name == fname]
            return not callees or not all(index < len(f.parameters) and f.parameters[index].pointer == 1
                                          and f.parameters[index].const for f in callees)
        if p.type in ("condition_clause", "unary_expression", "sizeof_expression") or (
                p.type == "binary_expression" and self._op(p) in ("==", "!=", "<", ">", "<=", ">=", "&&", "||")):
            return False
        if p.type == "subscript_argument_list":
            return False                      # used as an index (not a pointer then)
        if p.type == "init_declarator" and p.child_by_field_name("value") == e:
            decl = p.parent
            return not (decl is not None and any(c.type == "type_qualifier" and self.node_text(c) == "const"
                                                 for c in decl.children))
        if p.type == "cast_expression":
            return self._pointer_use_writes(p)
        if p.type == "conditional_expression" and p.child_by_field_name("condition") == e:
            return False
        return True                           # anything else: assume the worst

    def _element_written(self, x) -> bool:
        p = x.parent
        while p is not None and (p.type == "parenthesized_expression"
                                 or (p.type == "field_expression" and self._op(p) == "."
                                     and p.child_by_field_name("argument") == x)
                                 or (p.type == "subscript_expression" and p.child_by_field_name("argument") == x)):
            x, p = p, p.parent
        if p is None:
            return False
        if p.type == "assignment_expression" and p.child_by_field_name("left") == x:
            return True
        if p.type == "update_expression":
            return True
        if p.type == "pointer_expression" and self._op(p) == "&":
            return self._pointer_use_writes(p)
        if p.type == "init_declarator" and p.child_by_field_name("value") == x:
            d = p.child_by_field_name("declarator")
            decl = p.parent
            const = decl is not None and any(c.type == "type_qualifier" and self.node_text(c) == "const"
                                             for c in decl.children)
            return d is not None and d.type == "reference_declarator" and not const
        return False

    # -- launches ---------------------------------------------------------------------------

    @cached_property
    def launches(self) -> tuple[Launch, ...]:
        out = []
        for n in self._walk({"kernel_call_syntax"}):
            call = n.parent
            if call is None or call.type != "call_expression":
                continue
            fn = call.child_by_field_name("function")
            if fn is None:
                continue
            inner = fn
            while inner is not None and inner.type in ("qualified_identifier", "template_function"):
                inner = inner.child_by_field_name("name")
            kernel = self.node_text(inner if inner is not None else fn).split("::")[-1].split("<")[0].strip()
            args = tuple(self.token(c, Argument, kind=c.type) for c in n.named_children if c.type != "comment")
            out.append(Launch(kernel, self.pos(n.start_point)[0], self.pos(call.start_point),
                              self.pos(call.end_point), args, self.erroneous(call)))
        return tuple(out)

    def launches_of(self, kernel: str) -> list[Launch]:
        return [l for l in self.launches if l.kernel == kernel]

    @cached_property
    def dim3s(self) -> tuple[Dim3, ...]:
        out = []
        for n in self._walk({"declaration"}):
            t = n.child_by_field_name("type")
            if t is None or self.node_text(t).split("::")[-1].strip() != "dim3":
                continue
            for d in n.children_by_field_name("declarator"):
                if d.type == "function_declarator" and d.child_by_field_name("parameters") is not None:
                    # ``dim3 block(kTile, kTile)``: C++'s most vexing parse reads identifiers as parameter types
                    ident = d.child_by_field_name("declarator")
                    params = d.child_by_field_name("parameters").named_children
                    if ident is not None and ident.type == "identifier" and params and all(
                            c.type == "parameter_declaration" and c.child_by_field_name("declarator") is None
                            for c in params):
                        args = tuple(self.token(c, Argument, kind="identifier") for c in params)
                        out.append(Dim3(self.node_text(ident), self.pos(ident.start_point)[0], args,
                                        tuple(None for _ in args)))
                    continue
                if d.type != "init_declarator":
                    continue
                ident = d.child_by_field_name("declarator")
                value = d.child_by_field_name("value")
                if ident is None or ident.type != "identifier" or value is None:
                    continue
                if value.type == "call_expression":        # dim3 b = dim3(16, 16)
                    value = value.child_by_field_name("arguments")
                if value is None or value.type not in ("argument_list", "initializer_list"):
                    continue
                args = tuple(self.token(c, Argument, kind=c.type) for c in value.named_children
                             if c.type != "comment")
                dims = tuple(integer_literal(a.text) if a.kind == "number_literal" else None for a in args)
                out.append(Dim3(self.node_text(ident), self.pos(ident.start_point)[0], args, dims))
        return tuple(out)


# ---- the cache -----------------------------------------------------------------------------

_CACHE: OrderedDict[bytes, CudaSource] = OrderedDict()
_CACHE_SIZE = 64
_LOCK = threading.Lock()


def parse(text: str) -> CudaSource:
    """The model of ``text``, parsed once per distinct text (an LRU of the last few)."""
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    src = CudaSource(text)
    with _LOCK:
        _CACHE[key] = src
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return src


def parse_lines(lines) -> CudaSource:
    """The model of a file given as its lines (as ``str.splitlines`` gives them)."""
    return parse("\n".join(lines))
