#!/usr/bin/env python3
"""Mechanical mutation testing of model/ (issue 11, item 4; docs/MUTATION.md).

Generates mutants of model/*.h mechanically (negate a condition, swap a
comparison or a logical operator, drop a `!`, delete a statement, drop a lock,
skip a loop, swap break/continue, turn an error return into success, change a
literal, fetch_add<->fetch_sub (add_holding_lock<->sub_holding_lock), +<->-, ++<->--, front()<->back(),
true<->false), builds them all at once as a *mutant schema* (every site becomes
a run-time choice guarded by SC_MUT(id), tools/mutation/schema_switch.h), runs
the tests of the chosen CTest labels once per mutant with STREAMCHECK_MUTANT=id,
and reports the mutation score. Equivalent mutants are listed, with a reason,
in tools/mutation/equivalent.txt.

    python3 tools/mutate.py                      # build, run, report (label props)
    python3 tools/mutate.py --list               # the mutants, nothing built
    python3 tools/mutate.py --separate 3,17,40   # also build those as real textual
                                                 # mutants and compare the verdicts

Standard library only. Run it from the repository root.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

# model/ headers with executable logic. Left out, on purpose:
#   backend.h, memory_resource.h - concepts and never-defined archetypes only;
#   kernel_access.h              - one plain struct, no code;
#   mutants.h                    - the named mutants M1.. and their dispatch:
#                                  mutating it changes which named mutant a test
#                                  selects, not the protocol.
MUTATED_FILES = [
    "model/resource.h",
    "model/launch_recorder.h",
    "model/budget_resource.h",
    "model/logging_resource.h",
    "model/fault_injecting.h",
    "model/non_tracking_resource.h",
    "model/types.h",
    "model/pool_policy.h",
    "model/trace_keywords.h",
]
EXCLUDED_FILES = {
    "model/backend.h": "concepts and never-defined archetypes only",
    "model/memory_resource.h": "a concept and a never-defined archetype only",
    "model/kernel_access.h": "one plain struct, no code",
    "model/mutants.h": "the named mutants' registry and dispatch; mutating it changes which named mutant "
    "a test selects, not the protocol",
}
SWITCH_HEADER = "tools/mutation/schema_switch.h"
EQUIVALENT_FILE = "tools/mutation/equivalent.txt"
ENV_MUTANT = "STREAMCHECK_MUTANT"
ENV_REACHED = "STREAMCHECK_MUTANT_REACHED"


def die(msg: str) -> None:
    print(f"mutate.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------- scanning


def mask(text: str) -> str:
    """Same length as `text`; comments and preprocessor lines become spaces,
    the inside of string and char literals becomes '_' (the quotes stay), so
    that operators and literals are found only in code."""
    out = list(text)
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        # A preprocessor line and a // comment are blanked to the line's end.
        if (line_start and c == "#") or text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
            continue
        if c == "\n":
            line_start = True
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
            continue
        if c in "\"'":
            if c == "'" and i > 0 and (text[i - 1].isalnum()):  # digit separator
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = "_"
            i = j + 1
            continue
        i += 1
    return "".join(out)


def match_paren(m: str, i: int) -> int:
    """Index of the bracket closing the one at m[i]."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = []
    for j in range(i, len(m)):
        c = m[j]
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            if not stack or stack[-1] != c:
                raise ValueError(f"unbalanced bracket at offset {j}")
            stack.pop()
            if not stack:
                return j
    raise ValueError(f"unclosed bracket at offset {i}")


def top_level(m: str, s: int, e: int):
    """Offsets in m[s:e] that are outside every bracket."""
    depth = 0
    for j in range(s, e):
        c = m[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0:
            yield j


@dataclasses.dataclass
class Variant:
    operator: str
    start: int  # the span of the original text this variant replaces
    end: int
    real: str  # the replacement in a real (textual) mutant
    id: int = 0


@dataclasses.dataclass
class Site:
    kind: str  # cond, decl-cond, init, stmt, lock, loop-block, loop-stmt
    start: int
    end: int
    variants: list
    extra: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Mutant:
    id: int
    file: str
    line: int
    operator: str
    original: str
    mutated: str
    line_text: str
    start: int
    end: int
    real: str
    mutated_line: str

    def key(self) -> str:
        """Names the mutant in tools/mutation/equivalent.txt: stable under
        line moves and id changes, distinct for two changes on one line."""
        return f"{self.file} | {self.operator} | {self.line_text} | {self.mutated_line}"


REL_SWAPS = {"==": ["!="], "!=": ["=="], "<": ["<="], "<=": ["<"], ">": [">="], ">=": [">"]}
CONTROL_KEYWORDS = ("if", "for", "while", "switch", "else", "do", "catch", "try", "return")
STMT_SKIP_PREFIX = re.compile(
    r"^(using|typedef|static_assert|template|friend|namespace|enum|struct|class|union|goto|throw|"
    r"co_return|delete|requires|concept)\b")
DECL_RE = re.compile(
    r"^(?P<quals>(?:(?:static|inline|const|constexpr|mutable|thread_local|extern)\s+)*)"
    r"(?P<type>(?:typename\s+)?[A-Za-z_][\w:]*(?:\s*<[^;=]*?>)?(?:::\w+)*(?:\s+const)?)\s*[&*]*\s*"
    r"(?<![\w:])(?P<name>[A-Za-z_]\w*)\s*(?P<rest>[=({;].*|$)", re.S)
DECL_COND_RE = re.compile(
    r"^\s*(?:const\s+)?(?:auto|[A-Za-z_][\w:]*(?:<[^=]*>)?)\s*[&*]*\s+(?P<name>[A-Za-z_]\w*)\s*=[^=]")
LABEL_RE = re.compile(r"^(case\s+\w+(?:::\w+)*\s*:(?!:)|default\s*:|public\s*:|private\s*:|protected\s*:)\s*")
NOT_KEYWORD_TYPES = {"return", "else", "delete", "throw", "goto", "co_return", "case", "new"}


class FileMutator:
    """Finds the mutation sites of one header and renders its schema."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.text = text
        self.m = mask(text)
        self.sites: list[Site] = []
        self.skipped: list[tuple[int, str, str]] = []  # (offset, reason, text)
        self.string_names = self._string_names()
        self.params: dict = {}  # the parameters of the function being scanned

    # --- helpers
    def line_of(self, off: int) -> int:
        return self.text.count("\n", 0, off) + 1

    def line_text(self, off: int) -> str:
        s = self.text.rfind("\n", 0, off) + 1
        e = self.text.find("\n", off)
        return " ".join(self.text[s:e if e >= 0 else len(self.text)].split())

    def _string_names(self) -> set:
        names = set(re.findall(r"std::string\s*&?\s+(\w+)", self.m))
        names |= set(re.findall(r"std::string_view\s*&?\s+(\w+)", self.m))
        names |= {"to_string", "where", "message", "kw", "on", "block_name", "stream_name", "quoted", "one_line",
                  "trace_name", "word", "describe"}
        return names

    def stringish(self, s: int, e: int) -> bool:
        seg = self.m[s:e]
        if '"' in seg:
            return True
        return any(re.search(rf"\b{re.escape(n)}\b", seg) for n in self.string_names)

    def mutated_line(self, v) -> str:
        """The source line of v with v applied (v's own text when it spans
        several lines)."""
        s = self.text.rfind("\n", 0, v.start) + 1
        e = self.text.find("\n", v.end)
        e = len(self.text) if e < 0 else e
        if "\n" in self.text[v.start:v.end]:
            return " ".join(v.real.split())
        return " ".join((self.text[s:v.start] + v.real + self.text[v.end:e]).split()) or "(line deleted)"

    def skip(self, off: int, reason: str) -> None:
        self.skipped.append((off, reason, self.line_text(off)))

    # --- token variants of an expression span
    def token_variants(self, s: int, e: int, *, statement: bool, skip_braces: bool) -> list:
        m, t = self.m, self.text
        out = []
        excluded = []
        if skip_braces:
            j = s
            while j < e:
                if m[j] == "{":
                    k = match_paren(m, j)
                    excluded.append((j, k))
                    j = k + 1
                else:
                    j += 1

        def ok(pos: int) -> bool:
            return not any(a <= pos <= b for a, b in excluded)

        arith_ok = not self.stringish(s, e)
        for mo in re.finditer(r"(?<=\s)(==|!=|<=|>=|<|>|&&|\|\|)(?=\s)", m[s:e]):
            p = s + mo.start()
            if not ok(p):
                continue
            op = mo.group(1)
            if op in ("&&", "||"):
                out.append(Variant("logical-swap", p, p + len(op), "||" if op == "&&" else "&&"))
            else:
                for new in REL_SWAPS[op]:
                    out.append(Variant("relational-swap", p, p + len(op), new))
        for mo in re.finditer(r"!(?!=)", m[s:e]):
            p = s + mo.start()
            if ok(p) and (p == 0 or m[p - 1] not in "!="):
                out.append(Variant("negation-drop", p, p + 1, ""))
        if arith_ok:
            for mo in re.finditer(r"(?<=\s)(\+|-)(?=\s)", m[s:e]):
                p = s + mo.start()
                if ok(p):
                    out.append(Variant("arithmetic-swap", p, p + 1, "-" if mo.group(1) == "+" else "+"))
            if statement:
                for mo in re.finditer(r"(?<=\s)(\+=|-=)(?=\s)", m[s:e]):
                    p = s + mo.start()
                    if ok(p):
                        out.append(Variant("arithmetic-swap", p, p + 2, "-=" if mo.group(1) == "+=" else "+="))
        if statement:
            for mo in re.finditer(r"(\+\+|--)", m[s:e]):
                p = s + mo.start()
                if ok(p):
                    out.append(Variant("increment-swap", p, p + 2, "--" if mo.group(1) == "++" else "++"))
        # An atomic add and subtract, and their lock-holder forms (model/guarded.h).
        swapped = {"fetch_add": "fetch_sub", "fetch_sub": "fetch_add",
                   "add_holding_lock": "sub_holding_lock", "sub_holding_lock": "add_holding_lock"}
        for mo in re.finditer(r"\b(fetch_add|fetch_sub|add_holding_lock|sub_holding_lock)\b", m[s:e]):
            p = s + mo.start()
            if ok(p):
                out.append(Variant("atomic-swap", p, p + len(mo.group(0)), swapped[mo.group(0)]))
        for mo in re.finditer(r"\.(front|back)\(\)", m[s:e]):
            p = s + mo.start() + 1
            if ok(p):
                w = mo.group(1)
                out.append(Variant("index-swap", p, p + len(w), "back" if w == "front" else "front"))
        for mo in re.finditer(r"\b(true|false)\b", m[s:e]):
            p = s + mo.start()
            if ok(p):
                out.append(Variant("boolean-swap", p, p + len(mo.group(1)), "false" if mo.group(1) == "true" else "true"))
        for mo in re.finditer(r"(?<![\w.<])(\d+)(?![\w.>])", m[s:e]):
            p = s + mo.start()
            if not ok(p):
                continue
            v = int(mo.group(1))
            news = [str(v + 1)] + ([str(v - 1)] if v > 0 else [])
            for new in news:
                out.append(Variant("literal-change", p, p + len(mo.group(1)), new))
        # variable-swap: a parameter used where another parameter of the same
        # declared type belongs (the wrong stream, the wrong flag: M6's kind)
        for mo in re.finditer(r"(?<![\w.>:])([A-Za-z_]\w*)(?![\w(])", m[s:e]):
            p = s + mo.start()
            name = mo.group(1)
            if not ok(p) or name not in self.params:
                continue
            for other, typ in self.params.items():
                if other != name and typ == self.params[name]:
                    out.append(Variant("variable-swap", p, p + len(name), other))
        return out

    # --- sites
    def add_cond(self, s: int, e: int, in_constexpr_fn: bool) -> None:
        m = self.m
        semis = [j for j in top_level(m, s, e) if m[j] == ";"]
        if semis:  # if (init; cond)
            s = semis[-1] + 1
            while s < e and m[s].isspace():
                s += 1
        dm = DECL_COND_RE.match(m[s:e])
        if dm:
            name = dm.group("name")
            decl = self.text[s:e]
            v = Variant("condition-negate", s, e, f"{decl}; !{name}")
            self.sites.append(Site("decl-cond", s, e, [v], {"name": name}))
            return
        variants = [Variant("condition-negate", s, e, f"!({self.text[s:e]})")]
        for v in self.token_variants(s, e, statement=False, skip_braces=False):
            variants.append(v)
        self.sites.append(Site("cond", s, e, variants))

    def add_statement(self, s: int, e: int, frame) -> None:
        self.params = frame.params or {}
        first = len(self.sites)
        self._add_statement(s, e, frame)
        self.mark_constant_evaluable(first, frame)

    def mark_constant_evaluable(self, first: int, frame) -> None:
        # Sites in constexpr functions and default member initializers may be
        # constant-evaluated: they use SC_MUT_CE, which takes the original code
        # then. Elsewhere SC_MUT, without that test: a `const bool x = ...`
        # whose value happens to fold is constant-evaluated as well, and would
        # never see its mutant.
        for st in self.sites[first:]:
            st.extra["ce"] = frame.constexpr or frame.kind == "scope"

    def _add_statement(self, s: int, e: int, frame) -> None:
        """Statement m[s:e] (e = index of its ';'), control prefixes included."""
        m = self.m
        while s < e and m[s].isspace():
            s += 1
        if s >= e:
            return
        # labels and control prefixes of a single-statement body
        loop_prefix = None
        early_return_guard = False
        while True:
            seg = m[s:e]
            lm = LABEL_RE.match(seg)
            if lm:
                s += lm.end()
                continue
            em = re.match(r"else\b\s*", seg)
            if em and not re.match(r"else\s+if\b", seg):
                if frame.last_constexpr == "neg":
                    self.skip(s, "body of a named mutant's `if constexpr` branch")
                    return
                s += em.end()
                continue
            if em:
                s += len("else")
                while m[s].isspace():
                    s += 1
                continue
            cm = re.match(r"(if|for|while|switch)\s*(constexpr\s*)?\(", seg)
            if not cm:
                break
            op = s + cm.end() - 1
            cl = match_paren(m, op)
            kw, is_ce = cm.group(1), bool(cm.group(2))
            if kw == "if" and is_ce:
                cond = m[op + 1:cl]
                frame.last_constexpr = "neg" if re.match(r"\s*!", cond) else "pos"
                if "has(" in cond and frame.last_constexpr == "pos":
                    self.skip(s, "body of a named mutant's `if constexpr` branch")
                    return
                self.skip(s, "`if constexpr` condition (no run-time switch)")
            elif kw == "if":
                self.add_cond(op + 1, cl, frame.constexpr)
            elif kw in ("for", "while") and loop_prefix is None:
                loop_prefix = cl + 1
                while m[loop_prefix].isspace():
                    loop_prefix += 1
            early_return_guard = kw == "if" and not is_ce
            s = cl + 1
            while s < e and m[s].isspace():
                s += 1
        body_s, body_e = s, e + 1
        if loop_prefix is not None:
            body = self.text[loop_prefix:body_e]
            self.sites.append(Site("loop-stmt", loop_prefix, body_e,
                                   [Variant("loop-skip", loop_prefix, body_e, "{ break; " + body + " }")]))
        self.classify_statement(body_s, body_e, frame, guarded=early_return_guard)

    def classify_statement(self, s: int, e: int, frame, guarded: bool = False) -> None:
        m, t = self.m, self.text
        seg = m[s:e - 1].strip()
        if not seg:
            return
        if STMT_SKIP_PREFIX.match(seg) or "operator" in seg:
            if seg.startswith("static_assert"):
                self.skip(s, "static_assert (checked at compile time)")
            return
        if frame.kind == "scope":
            dm = DECL_RE.match(seg)
            if dm and dm.group("rest").startswith("=") and not re.search(r"\b(static|constexpr|inline)\b",
                                                                         dm.group("quals")):
                self.add_init(s, e, dm, frame)
            return
        if re.match(r"return\b", seg):
            self.add_return(s, e, frame, guarded)
            return
        if seg in ("break", "continue"):
            other = "continue" if seg == "break" else "break"
            variants = [Variant("statement-delete", s, e, ";")]
            if not frame.is_switch:  # `continue` means nothing to a switch
                variants.append(Variant("break-continue-swap", s, e, other + ";"))
            self.sites.append(Site("stmt", s, e, variants))
            return
        lk = re.match(r"std::(lock_guard|scoped_lock|unique_lock)(<[^>]*>)?\s+(\w+)\s*\((.*)\)$", seg, re.S)
        if lk:
            self.sites.append(Site("lock", s, e, [Variant("lock-drop", s, e, "")],
                                   {"name": lk.group(3), "args": t[s:e].strip()[:-1].split("(", 1)[1].rsplit(")", 1)[0]}))
            return
        if seg.startswith("(void)"):
            return
        dm = DECL_RE.match(seg)
        if dm and dm.group("type").split()[0] not in NOT_KEYWORD_TYPES and not re.match(r"^[\w:]+\s*(\(|=|\.|->|\[)", seg):
            if dm.group("rest").startswith("="):
                self.add_init(s, e, dm, frame)
            return
        # an expression statement: delete it, or change one token
        variants = [Variant("statement-delete", s, e, ";")]
        for v in self.token_variants(s, e - 1, statement=True, skip_braces=True):
            variants.append(v)
        self.sites.append(Site("stmt", s, e, variants))

    def add_init(self, s: int, e: int, dm, frame) -> None:
        """`T name = EXPR;`: mutate EXPR (and negate it when T is bool)."""
        m = self.m
        eq = m.index("=", s + dm.start("rest"))
        xs = eq + 1
        while m[xs].isspace():
            xs += 1
        xe = e - 1
        if xs >= xe or m[xs] == "{" or "](" in m[xs:xe] or "[&" in m[xs:xe]:
            return
        variants = []
        if dm.group("type").strip() in ("bool", "const bool") and m[xs:xe].strip() not in ("true", "false"):
            variants.append(Variant("condition-negate", xs, xe, f"!({self.text[xs:xe]})"))
        variants += self.token_variants(xs, xe, statement=False, skip_braces=False)
        if variants:
            self.sites.append(Site("init", xs, xe, variants))

    def add_return(self, s: int, e: int, frame, guarded: bool) -> None:
        m, t = self.m, self.text
        xs = s + len("return")
        while xs < e - 1 and m[xs].isspace():
            xs += 1
        xe = e - 1
        if xs >= xe or m[xs] == "{" or "](" in m[xs:xe]:
            return
        variants = []
        ops = [j for j in top_level(m, xs, xe) if m[j:j + 2] in ("==", "!=", "&&", "||", "<=", ">=")
               or (m[j] in "<>" and m[j - 1] == " " and m[j + 1] == " ")]
        bool_literal = m[xs:xe].strip() in ("true", "false")
        if (frame.ret == "bool" or ops) and not bool_literal:
            variants.append(Variant("return-negate", s, e, f"return !({t[xs:xe]});"))
        # an early error return (under an `if`, or building a ResourceError)
        # that reports success instead
        if frame.ret == "Status" and (guarded or m[xs:xe].startswith("ResourceError::")):
            variants.append(Variant("error-return-to-success", s, e, "return {};"))
        for v in self.token_variants(xs, xe, statement=False, skip_braces=False):
            variants.append(v)
        if variants:
            self.sites.append(Site("return", s, e, variants, {"xs": xs, "xe": xe}))

    # --- the whole file
    def scan(self) -> None:
        m = self.m

        @dataclasses.dataclass
        class Frame:
            kind: str  # scope, block, init, ignore
            stmt_start: int
            paren: int = 0
            ret: str | None = None
            constexpr: bool = False
            mutant_only: bool = False
            last_constexpr: str | None = None
            constexpr_pol: str | None = None
            is_switch: bool = False
            params: dict | None = None  # parameter name -> declared type

        stack = [Frame("scope", 0)]
        i, n = 0, len(m)
        while i < n:
            c = m[i]
            f = stack[-1]
            if c in "([":
                f.paren += 1
            elif c in ")]":
                f.paren -= 1
            elif c == "{":
                header = m[f.stmt_start:i]
                hs = header.strip()
                if f.kind in ("init", "ignore"):
                    stack.append(Frame(f.kind, i + 1))
                elif f.paren > 0:
                    if re.search(r"requires\s*\([^()]*\)\s*$", header):
                        stack.append(Frame("ignore", i + 1))
                    elif re.search(r"(\)|->\s*[\w:<>, ]+)\s*$", header):  # a lambda's body
                        stack.append(Frame("block", i + 1, ret=None, mutant_only=f.mutant_only))
                    else:
                        stack.append(Frame("init", i + 1))
                else:
                    stripped = re.sub(r"^(template\s*<[^{;]*?>\s*)+", "", hs)
                    if re.match(r"(namespace|struct|class|union|enum)\b", stripped) or re.match(
                            r"(inline\s+)?namespace\b", stripped):
                        if stripped.startswith("enum"):
                            stack.append(Frame("init", i + 1))
                        else:
                            stack.append(Frame("scope", i + 1))
                    elif hs == "" or re.search(r"(\)|\belse|\bdo|\btry|\bconst|\bnoexcept|\boverride|->\s*[\w:<>, ]+)\s*$",
                                               header):
                        stack.append(self.open_block(f, header, i, Frame))
                    else:
                        stack.append(Frame("init", i + 1))
            elif c == "}":
                child = stack.pop()
                f = stack[-1]
                if child.kind in ("block", "scope") and f.paren == 0 and f.kind in ("block", "scope"):
                    f.stmt_start = i + 1
                    f.last_constexpr = child.constexpr_pol
            elif c == ";" and f.paren == 0 and f.kind in ("block", "scope"):
                if not f.mutant_only:
                    self.add_statement(f.stmt_start, i, f)
                else:
                    self.skip(f.stmt_start + len(m[f.stmt_start:i]) - len(m[f.stmt_start:i].lstrip()),
                              "inside a named mutant's `if constexpr` branch")
                f.stmt_start = i + 1
            i += 1

    def open_block(self, f, header: str, brace: int, Frame):
        self.params = f.params or {}
        first = len(self.sites)
        child = self._open_block(f, header, brace, Frame)
        self.mark_constant_evaluable(first, f)
        return child

    def _open_block(self, f, header: str, brace: int, Frame):
        """A `{` that opens a block at statement level: a function body or a
        control statement's body. Registers the header's sites."""
        m = self.m
        hstart = f.stmt_start
        s = hstart
        while s < brace and m[s].isspace():
            s += 1
        child = Frame("block", brace + 1, ret=f.ret, constexpr=f.constexpr, mutant_only=f.mutant_only,
                      params=f.params)
        # control prefixes: else / if (...) / for (...)
        control = False
        is_loop = False
        while s < brace:
            seg = m[s:brace]
            lm = LABEL_RE.match(seg)
            if lm:
                s += lm.end()
                continue
            em = re.match(r"else\b\s*", seg)
            if em:
                control = True
                if not re.match(r"else\s+if\b", seg):
                    if f.last_constexpr == "neg" and not f.mutant_only:
                        child.mutant_only = True
                        self.skip(s, "body of a named mutant's `if constexpr` branch")
                    f.last_constexpr = None
                s += em.end()
                continue
            cm = re.match(r"(if|for|while|switch|do)\s*(constexpr\s*)?(\()?", seg)
            if not cm or (cm.group(1) != "do" and not cm.group(3)):
                break
            control = True
            if cm.group(1) == "do":
                s += 2
                continue
            op = s + cm.end() - 1
            cl = match_paren(m, op)
            kw, is_ce = cm.group(1), bool(cm.group(2))
            if child.mutant_only:
                pass
            elif kw == "if" and is_ce:
                cond = m[op + 1:cl]
                pol = "neg" if re.match(r"\s*!", cond) else "pos"
                child.constexpr_pol = pol
                if "has(" in cond and pol == "pos":
                    child.mutant_only = True
                    self.skip(s, "body of a named mutant's `if constexpr` branch")
                else:
                    self.skip(s, "`if constexpr` condition (no run-time switch)")
            elif kw == "if":
                f.last_constexpr = None
                self.add_cond(op + 1, cl, f.constexpr)
            elif kw in ("for", "while"):
                is_loop = True
            child.is_switch = kw == "switch"
            s = cl + 1
            while s < brace and m[s].isspace():
                s += 1
        if is_loop and not child.mutant_only:
            self.sites.append(Site("loop-block", brace + 1, brace + 1,
                                   [Variant("loop-skip", brace + 1, brace + 1, " break;")]))
        if not control:
            child.ret, child.constexpr = self.function_type(m[s:brace])
            child.params = self.function_params(m[s:brace])
        return child

    @staticmethod
    def function_params(h: str) -> dict:
        """name -> type of the parameters in function header h."""
        h = re.sub(r"^\s*(template\s*<[^{;]*?>\s*)+", "", h).strip()
        if "](" in h or h.startswith("["):
            return {}
        p = h.find("(")
        if p < 0:
            return {}
        try:
            q = match_paren(h, p)
        except ValueError:
            return {}
        params, depth, cur = {}, 0, ""
        for c in h[p + 1:q] + ",":
            if c in "<([{":
                depth += 1
            elif c in ">)]}":
                depth -= 1
            if c == "," and depth == 0:
                decl = cur.split("=")[0].strip()
                mo = re.match(r"^(.*?[\w&*>])\s*\b([A-Za-z_]\w*)$", decl)
                if mo and mo.group(1).strip() not in ("", "const"):
                    params[mo.group(2)] = " ".join(mo.group(1).split())
                cur = ""
            else:
                cur += c
        return params

    @staticmethod
    def function_type(h: str):
        h = re.sub(r"^\s*(template\s*<[^{;]*?>\s*)+", "", h).strip()
        constexpr = bool(re.search(r"\b(constexpr|consteval)\b", h))
        tm = re.search(r"->\s*([\w:<>, ]+?)\s*$", h)
        if "](" in h or h.startswith("["):
            return (tm.group(1).strip() if tm else None), constexpr
        h = re.sub(r"\b(static|inline|constexpr|consteval|virtual|explicit|friend)\s+", "", h)
        p = h.find("(")
        if p < 0:
            return None, constexpr
        before = h[:p].strip()
        # the return type is what precedes the (qualified) name
        depth, split = 0, -1
        for j, c in enumerate(before):
            if c == "<":
                depth += 1
            elif c == ">":
                depth -= 1
            elif c.isspace() and depth == 0:
                split = j
        if split < 0:
            return None, constexpr
        return before[:split].strip(), constexpr

    # --- rendering
    def render_schema(self) -> str:
        edits = sorted(self.sites, key=lambda st: (st.start, -st.end, 0 if st.kind.startswith("loop") else 1))
        # build a containment forest
        roots: list = []
        stack: list = []
        for st in edits:
            st.children = []
            while stack and not (stack[-1].start <= st.start and st.end <= stack[-1].end
                                 and (stack[-1].end > stack[-1].start)):
                stack.pop()
            if stack:
                if st.start < stack[-1].end and st.end > stack[-1].end:
                    raise RuntimeError(f"{self.path}: overlapping sites at offset {st.start}")
                stack[-1].children.append(st)
            else:
                roots.append(st)
            stack.append(st)

        def render(s: int, e: int, sites) -> str:
            out, pos = [], s
            for st in sites:
                if st.start < pos:
                    raise RuntimeError(f"{self.path}:{self.line_of(st.start)}: overlapping sites")
                out.append(self.text[pos:st.start])
                out.append(render_site(st))
                pos = st.end
            out.append(self.text[pos:e])
            return "".join(out)

        def real_of(v: Variant, st: Site) -> str:
            """The site's text with variant v applied (original text elsewhere)."""
            return self.text[st.start:v.start] + v.real + self.text[v.end:st.end]

        def render_site(st: Site) -> str:
            inner = render(st.start, st.end, st.children)
            vs = st.variants
            SC = "SC_MUT_CE" if st.extra.get("ce") else "SC_MUT"
            if st.kind == "cond":
                chain = "".join(f"{SC}({v.id}) ? static_cast<bool>({real_of(v, st)}) : " for v in vs)
                return f"({chain}static_cast<bool>({inner}))"
            if st.kind == "decl-cond":
                name = st.extra["name"]
                (v,) = vs
                return f"{inner}; {SC}({v.id}) ? !{name} : static_cast<bool>({name})"
            if st.kind == "init":
                chain = "".join(f"{SC}({v.id}) ? ({real_of(v, st)}) : " for v in vs)
                return f"({chain}({inner}))"
            if st.kind in ("stmt", "return"):
                chain = "".join(f"if ({SC}({v.id})) {{ {real_of(v, st)} }} else " for v in vs)
                return f"{{ {chain}{{ {inner} }} }}"
            if st.kind == "lock":
                (v,) = vs
                name, args = st.extra["name"], st.extra["args"]
                return f"std::unique_lock {name}({args}, std::defer_lock); if (!{SC}({v.id})) {name}.lock();"
            if st.kind == "loop-stmt":
                (v,) = vs
                return f"{{ if ({SC}({v.id})) break; {inner} }}"
            if st.kind == "loop-block":
                (v,) = vs
                return f" if ({SC}({v.id})) break;"
            raise RuntimeError(st.kind)

        body = render(0, len(self.text), roots)
        return body.replace("#pragma once", f'#pragma once\n#include "{SWITCH_HEADER}"', 1)

    def render_real(self, variant: Variant, site: Site) -> str:
        return self.text[:variant.start] + variant.real + self.text[variant.end:]


def collect(repo: Path):
    """All mutants of MUTATED_FILES, numbered from 1 in file order."""
    mutators, mutants, where = [], [], {}
    next_id = 1
    for rel in MUTATED_FILES:
        p = repo / rel
        if not p.exists():
            die(f"{rel} not found: run from the streamcheck repository root (or update MUTATED_FILES)")
        fm = FileMutator(rel, p.read_text())
        fm.scan()
        fm.sites.sort(key=lambda st: (st.start, st.end))
        for st in fm.sites:
            for v in st.variants:
                v.id = next_id
                next_id += 1
                orig = fm.text[v.start:v.end] if v.end > v.start else "(nothing)"
                mut = v.real if v.real else "(nothing)"
                anchor = v.start if v.end > v.start else max(st.start - 1, 0)
                mutants.append(Mutant(v.id, rel, fm.line_of(anchor), v.operator, " ".join(orig.split()),
                                      " ".join(mut.split()), fm.line_text(anchor), v.start, v.end, v.real,
                                      fm.mutated_line(v)))
                where[v.id] = (fm, st, v)
        mutators.append(fm)
    return mutators, mutants, where


# ---------------------------------------------------------------- building


def tracked_files(repo: Path) -> list:
    r = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=repo, capture_output=True)
    if r.returncode != 0:
        die("`git ls-files` failed: run from a git checkout of streamcheck")
    return [f for f in r.stdout.decode().split("\0") if f]


def sync_tree(repo: Path, dest: Path, overrides: dict) -> None:
    """Copies the working tree to dest, with `overrides` (path -> text);
    files whose content did not change keep their timestamps (so a re-run
    rebuilds only what changed)."""
    for rel in tracked_files(repo):
        src = repo / rel
        if not src.is_file():
            continue
        dst = dest / rel
        data = overrides[rel].encode() if rel in overrides else src.read_bytes()
        if rel == "CMakeLists.txt":
            # generated code may warn (e.g. unused results); warnings stay
            # visible but are not errors in the schema build
            data = data.replace(b"-Wall -Wextra -Werror", b"-Wall -Wextra")
        if dst.exists() and dst.read_bytes() == data:
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)


def label_targets(repo: Path, labels: list) -> list:
    targets = set()
    for cm in (repo / "tests").rglob("CMakeLists.txt"):
        text = cm.read_text()
        for mo in re.finditer(r"streamcheck_test\(\s*(\w+)(.*?)\)\s*$", text, re.M | re.S):
            lm = re.search(r"LABELS\s+([^)]*)", mo.group(2))
            if lm and set(lm.group(1).split()) & set(labels):
                targets.add(mo.group(1))
        # plain add_test(NAME .. COMMAND <target> ..) with the label set by
        # set_tests_properties in the same file (the mutants tests)
        if any(set(l.split()) & set(labels) for l in re.findall(r"LABELS\s+([\w ]+?)\s+(?:ENVIRONMENT|\))", text)):
            executables = set(re.findall(r"add_executable\((\w+)", text))
            for mo in re.finditer(r"add_test\(NAME\s+\S+\s+COMMAND\s+(\w+)", text):
                if mo.group(1) in executables:
                    targets.add(mo.group(1))
    return sorted(targets)


def build(src: Path, bdir: Path, targets: list, jobs: int, log: Path) -> bool:
    for tool in ("cmake", "ctest"):
        if not shutil.which(tool):
            die(f"`{tool}` not found on PATH: install CMake >= 3.25 (bash tools/run.sh test installs the build tools)")
    if not (bdir / "CMakeCache.txt").exists():
        cmd = ["cmake", "-S", str(src), "-B", str(bdir), "-DCMAKE_BUILD_TYPE=Release",
               "-DSTREAMCHECK_BUILD_CUDA=OFF", "-DSTREAMCHECK_BUILD_BENCH=OFF",
               # the generated choices trip these on purpose (e.g. `!(x) ? ..`)
               "-DCMAKE_CXX_FLAGS=-Wno-tautological-compare -Wno-parentheses -Wno-implicit-fallthrough"]
        if shutil.which("ccache"):
            cmd.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
        if shutil.which("ninja"):
            cmd += ["-G", "Ninja"]
        with open(log, "a") as f:
            if subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode != 0:
                shutil.rmtree(bdir, ignore_errors=True)  # configure again next time
                die(f"cmake could not configure {src} (see {log}): check that the plain tree configures "
                    f"(`cmake --preset default`; `bash tools/run.sh test` installs what is missing)")
    cmd = ["cmake", "--build", str(bdir), "-j", str(jobs), "--target", *targets]
    with open(log, "a") as f:
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode == 0


def discover_tests(bdir: Path, labels: list) -> list:
    regex = "^(" + "|".join(re.escape(l) for l in labels) + ")$"
    r = subprocess.run(["ctest", "--test-dir", str(bdir), "-L", regex, "--show-only=json-v1"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        die(f"ctest could not list the tests in {bdir}:\n{r.stderr}")
    tests = []
    for t in json.loads(r.stdout)["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        env = {}
        for kv in props.get("ENVIRONMENT", []):
            k, _, v = kv.partition("=")
            env[k] = v
        tests.append({"name": t["name"], "command": t["command"], "cwd": props.get("WORKING_DIRECTORY", str(bdir)),
                      "env": env, "will_fail": bool(props.get("WILL_FAIL", False)),
                      "skip_regex": props.get("SKIP_REGULAR_EXPRESSION", []),
                      "skip_rc": props.get("SKIP_RETURN_CODE")})
    if not tests:
        die(f"no test has the label(s) {labels} in {bdir}: check --labels")
    return tests


def run_tests(tests: list, mutant: int, timeout: float, rc_params: str | None, reached: Path | None = None,
              stop_at_first: bool = True):
    """(verdict, test, detail) for one mutant: killed / survived / timeout."""
    env = dict(os.environ)
    env[ENV_MUTANT] = str(mutant)
    env.pop(ENV_REACHED, None)
    if reached:
        env[ENV_REACHED] = str(reached)
    if rc_params is not None:
        env["RC_PARAMS"] = rc_params
    failures = []
    for t in tests:
        tenv = dict(env)
        tenv.update(t["env"])
        try:
            r = subprocess.run(t["command"], cwd=t["cwd"], env=tenv, capture_output=True, text=True,
                               errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired:
            failures.append(("timeout", t["name"], f"no result within {timeout:g} s"))
            if stop_at_first:
                break
            continue
        out = r.stdout + r.stderr
        if any(re.search(rx, out) for rx in t["skip_regex"]) or (t["skip_rc"] is not None and r.returncode == int(t["skip_rc"])):
            continue
        failed = (r.returncode != 0) != t["will_fail"]
        if failed:
            why = f"exit code {r.returncode}" if r.returncode >= 0 else f"signal {-r.returncode}"
            fl = [ln for ln in out.splitlines() if "Failure" in ln or "Falsifiable" in ln or "error" in ln.lower()]
            failures.append(("killed", t["name"], why + (": " + fl[0].strip()[:160] if fl else "")))
            if stop_at_first:
                break
    if not failures:
        return "survived", None, None
    kind, name, detail = failures[0]
    return kind, name, detail


# ---------------------------------------------------------------- equivalents


def load_equivalents(repo: Path) -> dict:
    p = repo / EQUIVALENT_FILE
    eq = {}
    if not p.exists():
        return eq
    for n, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, reason = line.partition(" => ")
        if not sep or not reason.strip():
            die(f"{EQUIVALENT_FILE}:{n}: expected `file | operator | line | mutated => reason`")
        eq[" ".join(key.split())] = reason.strip()
    return eq


# ---------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--labels", default="props", help="CTest labels whose tests must kill the mutants (comma list)")
    ap.add_argument("--build-dir", default="build/mutation", help="where the schema copy and its build go")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2, help="mutants run in parallel")
    ap.add_argument("--build-jobs", type=int, default=2, help="parallel compile jobs")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per test and mutant before `timeout`")
    ap.add_argument("--rc-params", default="seed=1",
                    help="RC_PARAMS for every run (default seed=1: a reproducible score); '' = RapidCheck defaults")
    ap.add_argument("--only", default="", help="run only these mutant ids (comma list, ranges a-b)")
    ap.add_argument("--list", action="store_true", help="list the mutants and skipped sites; build nothing")
    ap.add_argument("--separate", default="",
                    help="also build these mutant ids as real textual mutants (one build folder each) and "
                         "check that the schema gives the same verdict")
    ap.add_argument("--no-build", action="store_true", help="reuse the schema build as it is")
    ap.add_argument("--publish", default="",
                    help="also write the summary, the survivors and the skipped sites (not the full table) "
                         "as markdown to this file, e.g. docs/mutation-survivors.md")
    args = ap.parse_args()

    repo = Path.cwd()
    if not (repo / "model" / "resource.h").exists() or not (repo / "CMakeLists.txt").exists():
        die("run from the root of the streamcheck repository (model/resource.h not found here)")
    if not (repo / SWITCH_HEADER).exists():
        die(f"{SWITCH_HEADER} is missing: the schema needs it")
    labels = [l for l in args.labels.split(",") if l]
    rc_params = args.rc_params if args.rc_params != "" else None

    mutators, mutants, where = collect(repo)
    by_id = {mu.id: mu for mu in mutants}
    equivalents = load_equivalents(repo)

    if args.list:
        for mu in mutants:
            eq = " [equivalent]" if mu.key() in equivalents else ""
            print(f"{mu.id:4d} {mu.file}:{mu.line} {mu.operator}: {mu.original} -> {mu.mutated}{eq}")
        for fm in mutators:
            for off, reason, text in fm.skipped:
                print(f"skip {fm.path}:{fm.line_of(off)} {reason}: {text}")
        print(f"{len(mutants)} mutants, {sum(len(fm.skipped) for fm in mutators)} skipped sites", file=sys.stderr)
        return 0

    def parse_ids(spec: str) -> list:
        ids = []
        for part in spec.split(","):
            if not part:
                continue
            a, _, b = part.partition("-")
            try:
                ids += list(range(int(a), int(b or a) + 1))
            except ValueError:
                die(f"bad mutant id list {spec!r}: use e.g. 3,7,10-12")
        for i in ids:
            if i not in by_id:
                die(f"no mutant {i}: ids run from 1 to {len(mutants)} (see --list)")
        return ids

    selected = parse_ids(args.only) if args.only else [mu.id for mu in mutants]
    separate = parse_ids(args.separate) if args.separate else []

    out = repo / args.build_dir
    src, bdir = out / "schema" / "src", out / "schema" / "build"
    out.mkdir(parents=True, exist_ok=True)
    log = out / "build.log"
    log.write_text("")  # this run's build only
    targets = label_targets(repo, labels)
    if not targets:
        die(f"no test target has the label(s) {labels} in tests/**/CMakeLists.txt")

    t0 = time.time()
    if not args.no_build:
        overrides = {fm.path: fm.render_schema() for fm in mutators}
        sync_tree(repo, src, overrides)
        print(f"building the schema ({len(mutants)} mutants) in {bdir}: targets {' '.join(targets)} "
              f"(log: {log})", flush=True)
        if not build(src, bdir, targets, args.build_jobs, log):
            die(f"the schema does not build: a tool bug (a mutant that does not compile). See {log}; "
                f"the file:line in the copy under {src} names the site")
    t_build = time.time() - t0

    tests = discover_tests(bdir, labels)
    reached_file = out / "reached.txt"
    if reached_file.exists():
        reached_file.unlink()
    verdict, test, detail = run_tests(tests, 0, args.timeout, rc_params, reached=reached_file, stop_at_first=False)
    if verdict != "survived":
        die(f"with no mutant active the schema fails {test} ({verdict}: {detail}); the plain tree must pass "
            f"`ctest -L {args.labels}` first, else it is a tool bug")
    reached = {int(x) for x in reached_file.read_text().split()} if reached_file.exists() else set()
    print(f"baseline (no mutant) passes {len(tests)} tests; {len(reached)} mutants reached", flush=True)

    t1 = time.time()
    results = {}

    def one(mid):
        return mid, run_tests(tests, mid, args.timeout, rc_params)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        done = 0
        for mid, res in pool.map(one, selected):
            results[mid] = res
            done += 1
            if done % 25 == 0 or done == len(selected):
                print(f"  {done}/{len(selected)} mutants run", flush=True)
    t_run = time.time() - t1

    rows = []
    for mid in selected:
        mu = by_id[mid]
        v, test, detail = results[mid]
        reason = equivalents.get(mu.key())
        rows.append({"id": mid, "file": mu.file, "line": mu.line, "operator": mu.operator,
                     "original": mu.original, "mutated": mu.mutated, "line_text": mu.line_text,
                     "mutated_line": mu.mutated_line, "verdict": v, "killed_by": test, "detail": detail,
                     "reached": mid in reached, "equivalent": reason, "key": mu.key()})

    # separate builds: real textual mutants, one build folder each
    cross = []
    for mid in separate:
        fm, st, var = where[mid]
        sdir = out / "separate" / str(mid)
        sync_tree(repo, sdir / "src", {fm.path: fm.render_real(var, st)})
        print(f"building real mutant {mid} in {sdir}", flush=True)
        ok = build(sdir / "src", sdir / "build", targets, args.build_jobs, sdir / "build.log")
        if not ok:
            cross.append({"id": mid, "real": "compile-error", "schema": results.get(mid, ("?",))[0]})
            continue
        stests = discover_tests(sdir / "build", labels)
        rv, rt, _ = run_tests(stests, 0, args.timeout, rc_params)
        sv = results[mid][0] if mid in results else run_tests(tests, mid, args.timeout, rc_params)[0]
        cross.append({"id": mid, "real": rv, "real_killed_by": rt, "schema": sv, "agree": rv == sv})

    killed = sum(r["verdict"] in ("killed", "timeout") for r in rows)
    equivalent = sum(1 for r in rows if r["equivalent"] and r["verdict"] == "survived")
    wrong_eq = [r for r in rows if r["equivalent"] and r["verdict"] != "survived"]
    total = len(rows)
    score = killed / (total - equivalent) if total > equivalent else 1.0
    report = {
        "labels": labels, "rc_params": rc_params, "mutants": total, "killed": killed,
        "equivalent": equivalent, "survived": total - killed - equivalent, "score": score,
        "build_seconds": round(t_build, 1), "run_seconds": round(t_run, 1),
        "files": MUTATED_FILES, "excluded_files": EXCLUDED_FILES,
        "skipped_sites": [{"file": fm.path, "line": fm.line_of(o), "reason": r, "text": tx}
                          for fm in mutators for o, r, tx in fm.skipped],
        "separate_cross_check": cross, "results": rows,
    }
    (out / "mutation-report.json").write_text(json.dumps(report, indent=1))
    (out / "mutation-report.md").write_text(markdown(report))
    if args.publish:
        (repo / args.publish).write_text(markdown(report, full_table=False))
    print(f"mutation score {score:.1%}: {killed} killed of {total} mutants, {equivalent} equivalent, "
          f"{total - killed - equivalent} surviving (build {t_build:.0f} s, runs {t_run:.0f} s)")
    print(f"report: {out / 'mutation-report.md'} and mutation-report.json")
    for r in wrong_eq:
        print(f"note: mutant {r['id']} is listed in {EQUIVALENT_FILE} but was {r['verdict']}: remove the entry")
    for c in cross:
        if not c.get("agree"):
            print(f"warning: mutant {c['id']}: schema says {c['schema']}, real mutant says {c['real']}")
    return 0


def markdown(rep: dict, full_table: bool = True) -> str:
    L = [f"# Mutation report (labels: {', '.join(rep['labels'])}; RC_PARAMS={rep['rc_params']})", "",
         "Generated by `python3 tools/mutate.py` (docs/MUTATION.md explains it); do not edit by hand.", "",
         f"Score **{rep['score']:.1%}** = {rep['killed']} killed / ({rep['mutants']} mutants - "
         f"{rep['equivalent']} equivalent); {rep['survived']} survivors. Build {rep['build_seconds']} s, "
         f"runs {rep['run_seconds']} s.", ""]
    L += ["| file | mutants | killed | equivalent | survived | score |", "|---|---|---|---|---|---|"]
    for f in rep["files"]:
        rs = [r for r in rep["results"] if r["file"] == f]
        k = sum(r["verdict"] in ("killed", "timeout") for r in rs)
        e = sum(1 for r in rs if r["equivalent"] and r["verdict"] == "survived")
        sc = f"{k / (len(rs) - e):.0%}" if len(rs) > e else "-"
        L.append(f"| {f} | {len(rs)} | {k} | {e} | {len(rs) - k - e} | {sc} |")
    L.append("")
    if rep["separate_cross_check"]:
        L += ["## Schema vs real textual mutants (`--separate`)", "",
              "| id | where | operator | schema | real | agree |", "|---|---|---|---|---|---|"]
        rows = {r["id"]: r for r in rep["results"]}
        for c in rep["separate_cross_check"]:
            r = rows.get(c["id"], {})
            L.append(f"| {c['id']} | {r.get('file')}:{r.get('line')} | {r.get('operator')} | {c['schema']} | "
                     f"{c['real']} | {'yes' if c.get('agree') else '**no**'} |")
        L.append("")
    def cell(text: str) -> str:
        text = text if len(text) <= 90 else text[:87] + "..."
        return "`" + text.replace("|", "\\|").replace("`", "'") + "`"

    L += ["## Survivors", "",
          "`reached`: whether the tests ran the site at all with no mutant active (no: a feature the labels never "
          "exercise; yes: exercised, but no check notices the change).", "",
          "| id | where | operator | mutated line | reached | equivalent because |", "|---|---|---|---|---|---|"]
    for r in rep["results"]:
        if r["verdict"] == "survived":
            L.append(f"| {r['id']} | {r['file']}:{r['line']} | {r['operator']} | {cell(r['mutated_line'])} | "
                     f"{'yes' if r['reached'] else 'no'} | {r['equivalent'] or ''} |")
    if full_table:
        L += ["", "## All mutants", "", "| id | where | operator | original → mutated | verdict | killed by |",
              "|---|---|---|---|---|---|"]
        for r in rep["results"]:
            L.append(f"| {r['id']} | {r['file']}:{r['line']} | {r['operator']} | {cell(r['original'])} → "
                     f"{cell(r['mutated'])} | {r['verdict']} | {r['killed_by'] or ''} |")
    L += ["", "## Skipped sites", ""]
    for s in rep["skipped_sites"]:
        L.append(f"- {s['file']}:{s['line']} {s['reason']}: `{s['text']}`")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    sys.exit(main())
