#!/usr/bin/env python3
"""Check every gold answer of a held-out split against the unpacked corpus.

A held-out split is a folder holding corpus.json (the pinned packages) and one queries_*.jsonl: this folder
(click, rich, jinja2, commander) or ../context_heldout2 (itsdangerous, marshmallow, starlette, ws), chosen with
--split. Adapted from ../shared/eval/context/verify_gold.py (the development split's checker). Two changes only:
  * the pinned packages are read from the split folder's corpus.json;
  * JavaScript also accepts ES6 class definitions: "Class.method" is a method (or constructor, getter,
    setter, static or async method) defined inside "class Class ... {}", and "Class" alone is the class.
Every other rule is the original one (the rest of the diff is formatting and lint only).

Usage:
    python3 verify_gold.py [--split DIR] [--corpus DIR] [--queries FILE]
        --split    the split folder (default: this file's folder)
        --corpus   the unpacked packages (default: $HOME/.cache/cebench-<split name without "context_">/src,
                   where the split's fetch_corpus.sh puts them)
        --queries  the query file (default: the split folder's only queries_*.jsonl)

For each query it checks that
  * the id is unique, the kind is known, the package/version match the pinned corpus,
  * 1-3 gold_files are given and each exists in the unpacked tree (repo-relative path),
  * work_context.active_file (if any) exists,
  * every gold_symbols[].file is one of gold_files,
  * every gold symbol is defined in that file:
      - Python: a dotted qualified name resolved through the AST
        ("Class.method", "func", "Outer.Inner.method"); a plain module-level
        assignment ("NAME = ...") is also accepted and reported as a variable;
      - JavaScript: the name appears in a definition form such as
        "function NAME(", "X.NAME = function", "proto.NAME = function",
        "exports.NAME = function", "NAME: function", "var NAME = ",
        or a getter defined with defineGetter(obj, 'NAME', ...).
Exit status is 0 only when every check passes.
"""

import argparse
import ast
import glob
import json
import os
import re
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"paraphrase", "identifier", "error-message", "multi-file", "context"}
# crude guard against pasted code in query text (error messages are allowed verbatim)
CODE_RE = re.compile(
    r"\bdef \w+\s*\(|\bclass \w+\s*[(:]|\breturn\b[^.?!]*;|=>|[{}]|;\s*$|\bfunction\s*\w*\s*\([^)]*\)\s*\{"
)


_AST_CACHE = {}


def py_symbol(path, name, cache=_AST_CACHE):
    """Return (kind, start_line, end_line) if the dotted name is defined in the file, else None.

    kind is 'def', 'class' or 'variable'; lines are 1-based and inclusive
    (a decorated definition starts at its first decorator)."""
    if path not in cache:
        with open(path, encoding="utf-8") as fh:
            cache[path] = ast.parse(fh.read())
    tree = cache[path]
    parts = name.split(".")

    def find(node, parts):
        for n in ast.iter_child_nodes(node):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == parts[0]:
                if len(parts) == 1:
                    start = min([n.lineno] + [d.lineno for d in n.decorator_list])
                    return ("class" if isinstance(n, ast.ClassDef) else "def", start, n.end_lineno)
                r = find(n, parts[1:])
                if r:
                    return r
        return None

    r = find(tree, parts)
    if r:
        return r
    if len(parts) == 1:
        for n in tree.body:
            targets = []
            if isinstance(n, ast.Assign):
                targets = n.targets
            elif isinstance(n, ast.AnnAssign):
                targets = [n.target]
            for tg in targets:
                if isinstance(tg, ast.Name) and tg.id == name:
                    return ("variable", n.lineno, n.end_lineno)
    return None


def _js_block_end(src, pos, opener):
    """Index of the bracket closing the first `opener` at or after pos (strings and comments skipped)."""
    closer = {"{": "}", "[": "]", "(": ")"}[opener]
    i, depth, n = src.index(opener, pos), 0, len(src)
    while i < n:
        c = src[i]
        if c in "'\"`":
            q = c
            i += 1
            while i < n and src[i] != q:
                i += 2 if src[i] == "\\" else 1
        elif src.startswith("//", i):
            i = src.find("\n", i)
            if i < 0:
                return n - 1
        elif src.startswith("/*", i):
            i = src.find("*/", i) + 1
        elif c == opener:
            depth += 1
        elif c == closer:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return n - 1


def js_class_symbol(src, name):
    """(kind, start, end) of an ES6 class ("Class") or class member ("Class.method"), else None."""
    parts = name.split(".")
    if len(parts) > 2:
        return None
    m = re.search(rf"^\s*(?:export\s+)?class\s+{re.escape(parts[0])}\b[^{{]*", src, re.M)
    if not m:
        return None
    start = src.count("\n", 0, m.start() + len(m.group(0)) - len(m.group(0).lstrip())) + 1
    body_end = _js_block_end(src, m.end(), "{")
    if len(parts) == 1:
        return ("class", start, src.count("\n", 0, body_end) + 1)
    member = re.compile(
        rf"^[ \t]+(?:static\s+)?(?:async\s+)?(?:get\s+|set\s+)?{re.escape(parts[1])}\s*\([^)]*\)\s*\{{", re.M
    )
    mm = member.search(src, m.end(), body_end)
    if not mm:
        return None
    return ("def", src.count("\n", 0, mm.start()) + 1, src.count("\n", 0, _js_block_end(src, mm.end() - 1, "{")) + 1)


_SOURCE_CACHE = {}


def js_symbol(path, name, cache=_SOURCE_CACHE):
    """Return (kind, start_line, end_line) for a JavaScript definition of `name`, else None."""
    if path not in cache:
        with open(path, encoding="utf-8") as fh:
            cache[path] = fh.read()
    src = cache[path]
    found = js_class_symbol(src, name)
    if found:
        return found
    esc = re.escape(name)
    last = re.escape(name.split(".")[-1])
    pats = [
        ("def", rf"(?<![\w.]){esc}\s*=\s*function\b"),  # res.send = function send(...)
        ("def", rf"(?<![\w.]){esc}\s*=\s*(?:async\s+)?\("),  # x.y = (...) =>
        ("def", rf"\bfunction\s+{esc}\s*\("),  # function name(
        ("def", rf"\b{esc}\s*:\s*function\b"),  # name: function
        ("def", rf"defineGetter\(\s*\w+\s*,\s*['\"]{last}['\"]"),  # defineGetter(req, 'name', ...)
        ("variable", rf"\b(?:var|let|const)\s+{esc}\s*="),  # var name =
    ]
    if "." in name:  # "req.protocol" style names for getters
        obj = re.escape(name.split(".")[0])
        pats.insert(0, ("def", rf"defineGetter\(\s*{obj}\s*,\s*['\"]{last}['\"]"))
    for kind, p in pats:
        m = re.search(p, src)
        if not m:
            continue
        start = src.count("\n", 0, m.start()) + 1
        if kind == "def":
            end_idx = _js_block_end(src, m.end(), "{")
        else:
            nxt = [(src.find(ch, m.end()), ch) for ch in "{[;"]
            nxt = [(i, ch) for i, ch in nxt if i >= 0]
            i, ch = min(nxt)
            end_idx = i if ch == ";" else _js_block_end(src, i, ch)
        return (kind, start, src.count("\n", 0, end_idx) + 1)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default=HERE, help="the split folder (corpus.json and one queries_*.jsonl)")
    ap.add_argument("--corpus", help="the unpacked packages (default: the split's fetch_corpus.sh destination)")
    ap.add_argument("--queries", help="the query file (default: the split folder's queries_*.jsonl)")
    ap.add_argument(
        "--emit-spans",
        metavar="OUT.jsonl",
        help="write the resolved line span of every gold symbol: "
        '{"id", "gold_symbols": [{"file", "name", "kind", "start_line", "end_line"}]}',
    )
    args = ap.parse_args()
    split = os.path.abspath(args.split)
    name = os.path.basename(split).removeprefix("context_")
    args.corpus = args.corpus or os.path.expanduser(f"~/.cache/cebench-{name}/src")
    if args.queries is None:
        found = glob.glob(os.path.join(split, "queries_*.jsonl"))
        if len(found) != 1:
            sys.exit(f"{split}: expected one queries_*.jsonl, found {len(found)}; pass --queries")
        args.queries = found[0]
    # package -> (version, directory under the corpus root that is the repo root)
    with open(os.path.join(split, "corpus.json"), encoding="utf-8") as fh:
        CORPUS = {name: (pin["version"], pin["root"]) for name, pin in json.load(fh).items()}
    spans_out = []

    errors, ids = [], Counter()
    per_pkg_kind = Counter()
    sym_kinds = Counter()
    n = 0
    with open(args.queries, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            q = json.loads(line)
            n += 1
            qid = q.get("id")
            ids[qid] += 1

            def err(msg, qid=qid, lineno=lineno):
                errors.append(f"{qid} (line {lineno}): {msg}")

            pkg = q.get("package")
            if pkg not in CORPUS:
                err(f"unknown package {pkg}")
                continue
            version, rootdir = CORPUS[pkg]
            if q.get("version") != version:
                err(f"version {q.get('version')} != pinned {version}")
            if not qid or not qid.startswith(pkg + "-"):
                err("id must start with package name")
            if q.get("kind") not in KINDS:
                err(f"bad kind {q.get('kind')}")
            per_pkg_kind[(pkg, q.get("kind"))] += 1
            if not isinstance(q.get("query"), str) or len(q["query"]) < 10:
                err("query text missing/too short")
            root = os.path.join(args.corpus, rootdir)
            wc = q.get("work_context")
            if q.get("kind") == "context" and not wc:
                err("context query without work_context")
            if wc is not None:
                af = wc.get("active_file")
                if not af or not os.path.isfile(os.path.join(root, af)):
                    err(f"work_context.active_file missing: {af}")
            gf = q.get("gold_files") or []
            if not 1 <= len(gf) <= 3:
                err(f"gold_files must have 1-3 entries, has {len(gf)}")
            if len(set(gf)) != len(gf):
                err("duplicate gold_files")
            for f in gf:
                if f.startswith("/") or f.startswith(rootdir.split("/")[0]):
                    err(f"gold file not repo-relative: {f}")
                if not os.path.isfile(os.path.join(root, f)):
                    err(f"gold file does not exist: {f}")
            if CODE_RE.search(q.get("query", "")):
                err("query text looks like pasted source code")
            gs = q.get("gold_symbols") or []
            if not gs:
                err("no gold_symbols")
            resolved = []
            for s in gs:
                f, name = s.get("file"), s.get("name")
                if f not in gf:
                    err(f"symbol file {f} not in gold_files")
                p = os.path.join(root, f)
                if not os.path.isfile(p):
                    err(f"symbol file does not exist: {f}")
                    continue
                r = py_symbol(p, name) if f.endswith(".py") else js_symbol(p, name)
                if r is None:
                    err(f"symbol {name} not defined in {f}")
                else:
                    sym_kinds[r[0]] += 1
                    resolved.append({"file": f, "name": name, "kind": r[0], "start_line": r[1], "end_line": r[2]})
            spans_out.append({"id": qid, "gold_symbols": resolved})
            # gold_files[0] should carry at least one gold symbol (most relevant first)
            if gf and gs and not any(s.get("file") == gf[0] for s in gs):
                err("first gold file has no gold symbol")

    for qid, c in ids.items():
        if c > 1:
            errors.append(f"duplicate id {qid}")

    print(f"queries: {n}")
    pkgs = sorted({p for p, _ in per_pkg_kind})
    kinds = sorted(KINDS)
    print("package".ljust(10) + "".join(k.rjust(15) for k in kinds) + "total".rjust(8))
    for p in pkgs:
        row = [per_pkg_kind[(p, k)] for k in kinds]
        print(p.ljust(10) + "".join(str(x).rjust(15) for x in row) + str(sum(row)).rjust(8))
    print(f"gold symbols resolved: {dict(sym_kinds)}")
    if args.emit_spans:
        with open(args.emit_spans, "w", encoding="utf-8") as fh:
            for r in spans_out:
                fh.write(json.dumps(r) + "\n")
        print(f"spans written to {args.emit_spans}")
    if errors:
        print(f"\n{len(errors)} ERRORS:")
        for e in errors:
            print("  " + e)
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
