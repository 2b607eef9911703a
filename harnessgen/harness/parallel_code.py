"""Which of post's parallel code pre does not run: the trigger of the automatic race check.

A transformation can make code race without touching a single OpenMP directive: moving a
sequential loop into the body of a parallel map, fusing two maps into one parallel region,
rewriting the body of an existing region. Comparing directive lines misses all of these.
Here every OpenMP construct that runs threads is taken with the statement it governs
(brace-matched) and, transitively, the bodies of the functions that statement calls (DaCe
puts nested SDFGs into functions of their own); each is normalized (the side's own name,
whitespace) and post's are compared with pre's. A post region without an identical twin in
pre is parallel code that pre never ran: post must be judged on several threads.
"""
from __future__ import annotations

import re
from typing import Dict, List, Set

# the constructs that start threads or share a loop's iterations among them (not simd)
_THREAD_PRAGMA = re.compile(r"^\s*#\s*pragma\s+omp\s+(parallel|for|sections|task|taskloop)\b")
_FUNCTION = re.compile(r"^[ \t]*(?:(?:inline|static|DACE_EXPORTED|extern|\"C\")\s+)*void\s+(\w+)\s*\(", re.MULTILINE)
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_SPACE = re.compile(r"\s+")


def _statement_end(text: str, start: int) -> int:
    """The end of the statement that begins at ``start``: its braces closed, or its ``;``
    outside any parentheses when it opens no brace."""
    braces = parens = 0
    opened = False
    for index in range(start, len(text)):
        char = text[index]
        if char == "(":
            parens += 1
        elif char == ")":
            parens -= 1
        elif char == "{":
            braces += 1
            opened = True
        elif char == "}":
            braces -= 1
            if opened and braces == 0:
                return index + 1
        elif char == ";" and not opened and parens == 0:
            return index + 1
    return len(text)


def regions(source: str) -> List[str]:
    """Each threaded OpenMP construct with the statement it governs, as written."""
    found = []
    offset = 0
    for line in source.splitlines(keepends=True):
        if _THREAD_PRAGMA.match(line):
            body_start = offset + len(line)
            found.append(source[offset:_statement_end(source, body_start)])
        offset += len(line)
    return found


def functions(source: str) -> Dict[str, str]:
    """The body of every ``void`` function defined in the file, by name."""
    bodies = {}
    for match in _FUNCTION.finditer(source):
        brace = source.find("{", match.end())
        semicolon = source.find(";", match.end())
        if brace < 0 or 0 <= semicolon < brace:        # a declaration, not a definition
            continue
        bodies[match.group(1)] = source[brace:_statement_end(source, brace)]
    return bodies


def signatures(source: str, side_name: str) -> Set[str]:
    """Each parallel region, with the bodies of the functions it calls (transitively),
    normalized so that pre's and post's own names and the layout of the text do not count."""
    bodies = functions(source)
    out = set()
    for region in regions(source):
        parts, seen, queue = [region], set(), list(_CALL.findall(region))
        while queue:
            name = queue.pop(0)
            if name in bodies and name not in seen:
                seen.add(name)
                parts.append(bodies[name])
                queue += _CALL.findall(bodies[name])
        out.add(_SPACE.sub(" ", "\n".join(parts).replace(side_name, "<side>")).strip())
    return out


def new_parallel_code(pre_source: str, pre_name: str, post_source: str, post_name: str) -> List[str]:
    """Post's parallel regions that pre does not run identically (normalized texts, sorted)."""
    return sorted(signatures(post_source, post_name) - signatures(pre_source, pre_name))
