"""Newick trees read and written as ete4 reads them with ``parser=1`` (every node may
have a name, leaves and internal nodes alike), for :meth:`stol.Taxonomy.annotate`.

Reading:

- a label is bare, or quoted in single quotes (``''`` inside is one quote) or double
  quotes (``""`` inside is one); a bare label runs to the next ``:`` ``[`` ``,`` ``(``
  ``)`` or ``;``, blanks around it dropped and blanks inside kept (``Homo sapiens``
  unquoted is one label, as in ete4);
- a branch length after ``:`` is kept as its original text (``0.50`` stays ``0.50``)
  and must be a number (decimal, or ``inf``/``nan`` as ete4's ``float`` reads them);
- an NHX comment ``[&&NHX:k=v:k2=v2]`` in a node's content (after its label or its
  length) is read into (key, value) pairs, kept in order; every other ``[...]``
  comment is skipped; blanks and newlines between tokens are ignored;
- ``;`` ends the tree; only blanks and comments may follow it (one tree per text).

Errors (unbalanced parentheses, no ``;``, text after it, an unclosed quote or ``[``, a
length that is not a number, an NHX field without ``=``) raise
:class:`~stol.NewickError` naming the position (characters from 0, line and
column). Both reading and writing are loops over an explicit stack: a caterpillar
100,000 levels deep never meets Python's recursion limit.

Writing gives the structure as read. A node read from the text keeps its text
(``source``: its label, length and comments as they were, blanks around them
dropped) and is written back so, byte for byte, until its ``source`` is set to
``None``; a node without one is written from its parts: the label quoted only where
Newick needs it, as ete4's ``quote()`` does (blanks, ``()[]':;,``; single quotes,
inner ones doubled; also a label starting with ``"``, which ete4 would write bare and
then fail to read), ``:length``, and its NHX pairs in their stored order.

``Sources/STOLModel/NewickTree.swift`` is the Swift client's reader and writer of the
same Newick (``stol-client annotate``).
"""

from __future__ import annotations

import re
from typing import Dict, Iterator, List, Optional, Tuple

from .errors import NewickError

__all__ = ["NewickNode", "parse_newick", "write_newick", "quote_label", "nhx_value"]

_BLANKS = " \t\r\n"
_SKIP_BLANKS = re.compile(r"[ \t\r\n]*")
_BARE_LABEL = re.compile(r"[^:\[,();]*")
_LENGTH = re.compile(r"[^ \t\r\n\[,();:]*")
_NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)",
                     re.IGNORECASE)
_QUOTE_IF = frozenset(" \t\r\n()[]':;,")
_NHX_ESCAPED = str.maketrans({c: "_" for c in ":;(),[]="})


class NewickNode:
    """One node of a Newick tree: ``label`` (unquoted), ``length`` (the text after
    ``:`` as written, ``None`` without one), ``nhx`` (the (key, value) pairs of its NHX
    comments, in order), ``children`` (empty for a leaf), ``source`` (its content as
    the text had it, written back as it is; ``None``: written from label, length and
    NHX) and ``props`` (what :meth:`~stol.Taxonomy.annotate` found for it: ``taxid``,
    ``sci_name``, ``common_name``, ``rank``, ``lineage`` and ``named_lineage`` as Python
    values; empty for a node it left as it was)."""

    __slots__ = ("label", "length", "nhx", "children", "source", "props")

    def __init__(self, label: str = "", length: Optional[str] = None,
                 nhx: Optional[List[Tuple[str, str]]] = None, children: Optional[List["NewickNode"]] = None,
                 source: Optional[str] = None):
        self.label = label
        self.length = length
        self.nhx: List[Tuple[str, str]] = [] if nhx is None else nhx
        self.children: List[NewickNode] = [] if children is None else children
        self.source = source
        self.props: Dict[str, object] = {}

    @property
    def is_leaf(self) -> bool:
        """Whether the node has no children."""
        return not self.children

    def traverse(self) -> Iterator["NewickNode"]:
        """The nodes of this subtree in preorder (the node first), without recursion."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def leaves(self) -> Iterator["NewickNode"]:
        """The leaves of this subtree, left to right."""
        return (node for node in self.traverse() if not node.children)

    def __repr__(self) -> str:
        return "NewickNode(%r, length=%r, children=%d)" % (self.label, self.length, len(self.children))


def quote_label(label: str) -> str:
    """``label`` as Newick writes it: as it is, or in single quotes (inner ones doubled)
    when it holds a blank or one of ``()[]':;,`` (ete4's ``quote()``), or starts with a
    double quote."""
    if label.startswith('"') or any(character in _QUOTE_IF for character in label):
        return "'" + label.replace("'", "''") + "'"
    return label


def nhx_value(value) -> str:
    """A property as ete4's ``prop_repr`` writes it in NHX: a list joined with ``|``,
    and each of ``:;(),[]=`` replaced with ``_`` (so that the comment reads back)."""
    if isinstance(value, (list, tuple, set, frozenset)):
        text = "|".join(str(item) for item in value)
    else:
        text = str(value)
    return text.translate(_NHX_ESCAPED)


def _nhx_pairs(body: str, position: int, text: str) -> List[Tuple[str, str]]:
    """The pairs of an NHX comment's body (``&&NHX:k=v:k2=v2``)."""
    pairs: List[Tuple[str, str]] = []
    for item in body[len("&&NHX:"):].split(":"):
        if not item:
            continue  # "[&&NHX:]", "a=1::b=2": nothing there
        key, equals, value = item.partition("=")
        if not equals:
            raise NewickError("an NHX field without 'key=': %r" % (item,), position, text)
        pairs.append((key, value))
    return pairs


def parse_newick(text: str) -> NewickNode:
    """The tree of a Newick text (one tree, ending with ``;``), as the module says.
    Raises :class:`~stol.NewickError` with the position of the first problem."""
    if not isinstance(text, str):
        raise TypeError("a Newick text is a str, not %r" % (type(text).__name__,))
    end = len(text)

    def skip(index: int, sink: Optional[List[Tuple[str, str]]]) -> int:
        """After blanks and comments from ``index``; NHX pairs go to ``sink`` (``None``:
        stop before an NHX comment, which belongs to the node that follows)."""
        while True:
            if index >= end or text[index] not in " \t\r\n[":  # the common case, without the regex
                return index
            index = _SKIP_BLANKS.match(text, index).end()
            if index >= end or text[index] != "[":
                return index
            close = text.find("]", index + 1)
            if close < 0:
                raise NewickError("a '[' without its ']'", index, text)
            body = text[index + 1:close]
            if body == "&&NHX" or body.startswith("&&NHX:"):
                if sink is None:
                    return index
                sink.extend(_nhx_pairs(body, index, text))
            index = close + 1

    def content(index: int, node: NewickNode) -> int:
        """Reads a node's label, length and NHX from ``index``; returns where they end."""
        start = index = skip(index, None)
        index = skip(index, node.nhx)
        if index < end and text[index] in "'\"":
            quote, start = text[index], index
            parts: List[str] = []
            index += 1
            while True:
                close = text.find(quote, index)
                if close < 0:
                    raise NewickError("a %s without its closing quote" % (quote,), start, text)
                if close + 1 < end and text[close + 1] == quote:
                    parts.append(text[index:close + 1])  # a doubled quote is one
                    index = close + 2
                    continue
                parts.append(text[index:close])
                index = close + 1
                break
            node.label = "".join(parts)
            index = skip(index, node.nhx)
            if index < end and text[index] not in ":,);":
                raise NewickError("text after a quoted label", index, text)
        else:
            stop = _BARE_LABEL.match(text, index).end()
            node.label = text[index:stop].strip()  # any white space, as ete4's unquote() and the Swift reader
            index = skip(stop, node.nhx)
        if index < end and text[index] == ":":
            index = skip(index + 1, node.nhx)
            stop = _LENGTH.match(text, index).end()
            length = text[index:stop]
            if not length:
                raise NewickError("a ':' without a branch length", index, text)
            if not _NUMBER.fullmatch(length):
                raise NewickError("the branch length %r is not a number" % (length,), index, text)
            node.length = length
            index = skip(stop, node.nhx)
        node.source = text[start:index].strip(_BLANKS)
        return index

    index = 0
    opened: List[Tuple[NewickNode, int]] = []  # the internal nodes open, with the position of their '('
    while True:
        index = skip(index, None)
        if index < end and text[index] == "(":
            opened.append((NewickNode(), index))
            index += 1
            continue
        node = NewickNode()
        index = content(index, node)
        while True:  # after a whole node: a sibling, the end of its parent, or the end
            if index >= end:
                if opened:
                    raise NewickError("no ')' for the '(' at position %d" % opened[-1][1], end, text)
                raise NewickError("the tree does not end with ';'", end, text)
            character = text[index]
            if character == ",":
                if not opened:
                    raise NewickError("a ',' outside parentheses", index, text)
                opened[-1][0].children.append(node)
                index += 1
                break
            if character == ")":
                if not opened:
                    raise NewickError("a ')' without its '('", index, text)
                parent = opened.pop()[0]
                parent.children.append(node)
                node = parent
                index = content(index + 1, node)
                continue
            if character == ";":
                if opened:
                    raise NewickError("no ')' for the '(' at position %d" % opened[-1][1], index, text)
                rest = skip(index + 1, None)
                if rest < end:
                    raise NewickError("text after the ';' that ends the tree", rest, text)
                return node
            raise NewickError("unexpected %r" % (character,), index, text)


def _content(node: NewickNode) -> str:
    if node.source is not None:
        return node.source
    out = quote_label(node.label)
    if node.length is not None:
        out += ":" + node.length
    if node.nhx:
        out += "[&&NHX:" + ":".join("%s=%s" % pair for pair in node.nhx) + "]"
    return out


def write_newick(root: NewickNode) -> str:
    """The Newick text of a tree (ending with ``;``), as the module says."""
    out: List[str] = []
    stack: List[List] = [[root, 0]]
    if root.children:
        out.append("(")
    while stack:
        top = stack[-1]
        node, position = top
        if position < len(node.children):
            if position:
                out.append(",")
            top[1] = position + 1
            child = node.children[position]
            if child.children:
                out.append("(")
                stack.append([child, 0])
            else:
                out.append(_content(child))
            continue
        stack.pop()
        if node.children:
            out.append(")")
        out.append(_content(node))
    out.append(";")
    return "".join(out)
