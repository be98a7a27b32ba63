#!/usr/bin/env python3
"""Fails when a module of a workspace crate imports a module that imports it.

The graph has one node per source file and an edge from a file to the file that *defines*
each item it names through a `crate::`, `super::` or `self::` path (in `use` trees and in
expressions, `$crate::` in macros included). Re-exports (`pub use a::X`) are followed to the
defining file and are not edges themselves, and `mod` declarations are not edges: a parent
that only declares and re-exports its children does not depend on them. Inline modules
(`mod tests { ... }`) are modules of their own that nothing imports, so they cannot close a
cycle: their paths are not edges.

Usage: python3 .ci/module_cycles.py [ROOT] [-v]   (exit 1 and one line per cycle when any)

`.ci/module_cycles.allow` lists the cycles not yet broken, one per line as printed; the check
fails on any other cycle and on a listed cycle that is gone, so the list only shrinks.
"""

import re
import sys
from pathlib import Path

ITEM = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+|const\s+|async\s+|extern\s+\"C\"\s+)*"
    r"(?:fn|struct|enum|trait|type|const|static|union|mod)\s+([A-Za-z_][A-Za-z0-9_]*)"
)
MACRO = re.compile(r"^\s*macro_rules!\s*([A-Za-z_][A-Za-z0-9_]*)")
PATH = re.compile(r"(?<![A-Za-z0-9_:])\$?(crate|super|self|[a-z_][a-z0-9_]*)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
INLINE_MOD = re.compile(r"^\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")


def strip(text):
    """The source without comments, string and char literals (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    out.append("\n" if text[i] == "\n" else "")
                    i += 1
        elif (m := re.match(r'b?r(#*)"', text[i:])) and (i == 0 or not text[i - 1].isalnum()):
            end = text.find('"' + m.group(1), i + m.end())
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and (m := re.match(r"'(?:\\.[^']*|[^\\'])'", text[i:])):
            out.append("' '")
            i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand_use(tree):
    """`a::{b, c::{d, e as f}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)
    depth, start = 0, None
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                prefix, inner, rest = tree[:start], tree[start + 1 : i], tree[i + 1 :]
                parts, d, cur = [], 0, ""
                for c in inner:
                    if c == "," and d == 0:
                        parts.append(cur)
                        cur = ""
                        continue
                    d += c == "{"
                    d -= c == "}"
                    cur += c
                parts.append(cur)
                out = []
                for p in filter(None, parts):
                    out += expand_use(prefix + p + rest)
                return out
    return [tree.removesuffix("::self")]


class Crate:
    def __init__(self, src):
        self.src = src
        self.modules = {}  # module path (tuple) -> file
        for f in sorted(src.rglob("*.rs")):
            rel = f.relative_to(src).with_suffix("").parts
            if rel in (("lib",), ("main",)):
                mod = ()
            elif rel[-1] == "mod":
                mod = rel[:-1]
            else:
                mod = rel
            if mod in self.modules and rel in (("main",),):
                continue  # a binary beside the library: its own root
            self.modules[mod] = f
        self.file_mod = {f: m for m, f in self.modules.items()}
        self.items, self.reexports, self.uses = {}, {}, {}
        for mod, f in self.modules.items():
            self.scan(mod, f)

    def scan(self, mod, f):
        # `pub(in crate::a)` is a visibility, not an import.
        text = re.sub(r"pub\s*\(\s*in\s+[^)]*\)", "pub", strip(f.read_text()))
        items, reexports, uses = set(), {}, []
        depth, inline = 0, []  # inline module stack: brace depth at which it opened
        statement = None
        for line in text.split("\n"):
            if statement is None and depth == 0:
                m = ITEM.match(line) or MACRO.match(line)
                if m:
                    items.add(m.group(1))
            if statement is None and INLINE_MOD.match(line):
                inline.append(depth)
            if statement is None and re.match(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s", line):
                statement, top = "", depth == 0
            if statement is not None:
                # A use tree's braces balance: they do not change the depth.
                statement += line + " "
                if ";" in line:
                    stmt = statement.split(";")[0]
                    public = re.match(r"^\s*pub", stmt) is not None
                    body = re.sub(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+", "", stmt)
                    for path in expand_use(body):
                        if inline:
                            continue  # an inline module (tests): nothing imports it
                        if top:
                            reexports.setdefault(path.split("::")[-1], path)
                        uses.append((path, bool(inline), public and top))
                    statement = None
                continue
            for m in PATH.finditer(line if not inline else ""):
                uses.append((m.group(1) + m.group(2), bool(inline), False))
            depth += line.count("{") - line.count("}")
            while inline and depth <= inline[-1]:
                inline.pop()
        self.items[mod], self.reexports[mod], self.uses[mod] = items, reexports, uses

    def absolute(self, mod, path, in_inline):
        """The absolute segments of `path` written in module `mod`, or None (external)."""
        segs = path.split("::")
        base = list(mod)
        if in_inline and segs[0] == "super":
            segs = ["self"] + segs[1:]  # `super` of an inline module is the file's module
        if segs[0] == "crate":
            base, segs = [], segs[1:]
        elif segs[0] in ("self", "super"):
            while segs and segs[0] in ("self", "super"):
                if segs[0] == "super":
                    if not base:
                        return None
                    base.pop()
                segs = segs[1:]
        else:
            # A path relative to the current module: a child module or a local item.
            if tuple(base + [segs[0]]) not in self.modules:
                return None
        return base + segs

    def define(self, segs, seen=None):
        """The file that defines the item at absolute `segs` (following re-exports)."""
        seen = seen or set()
        key = tuple(segs)
        if key in seen:
            return None
        seen.add(key)
        mod, i = (), 0
        while i < len(segs) and mod + (segs[i],) in self.modules:
            mod += (segs[i],)
            i += 1
        if i == len(segs):
            return self.modules[mod]  # the path names a module
        name = segs[i]
        if name in self.items[mod]:
            return self.modules[mod]
        target = self.reexports[mod].get(name)
        if target is not None:
            full = self.absolute(mod, target, False)
            if full is not None:
                return self.define(full + segs[i + 1 :], seen)
            return None
        # A glob re-export (`pub use methods::*`) or a name from `use super::*`.
        for glob, path in self.reexports[mod].items():
            if glob == "*":
                full = self.absolute(mod, path.rsplit("::", 1)[0], False)
                if full is not None:
                    found = self.define(full + [name] + segs[i + 1 :], seen)
                    if found is not None:
                        return found
        return self.modules[mod]

    def edges(self):
        graph = {f: set() for f in self.file_mod}
        for mod, uses in self.uses.items():
            here = self.modules[mod]
            for path, in_inline, reexport in uses:
                if reexport or path.endswith("::*"):
                    continue  # a re-export is followed, not an edge; globs are test preludes
                full = self.absolute(mod, path, in_inline)
                if not full:
                    continue
                target = self.define(full)
                if target is not None and target != here:
                    graph[here].add(target)
        return graph


def cycles(graph):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in graph:
        if v not in index:
            visit(v)
    return out


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else ".")
    allow_file = Path(__file__).with_name("module_cycles.allow")
    allowed = set()
    if allow_file.exists():
        allowed = {
            line.strip()
            for line in allow_file.read_text().splitlines()
            if line.strip() and not line.startswith("#")
        }
    srcs = [root / "src"] + sorted(p / "src" for p in (root / "crates").iterdir())
    found, bad = set(), 0
    for src in srcs:
        if not src.is_dir():
            continue
        graph = Crate(src).edges()
        for comp in cycles(graph):
            key = ", ".join(sorted(str(f.relative_to(root)) for f in comp))
            found.add(key)
            if key in allowed:
                continue
            bad += 1
            print(f"import cycle of {len(comp)} files: {key}")
            if "-v" in sys.argv:
                for f in sorted(comp):
                    for t in sorted(graph[f] & set(comp)):
                        print(f"    {f.relative_to(root)} -> {t.relative_to(root)}")
    for key in sorted(allowed - found):
        bad += 1
        print(f"{allow_file.name} lists a cycle that is gone (remove the line): {key}")
    if bad:
        sys.exit(1)
    print(f"no import cycles ({len(found)} known, listed in {allow_file.name})")


if __name__ == "__main__":
    main()
