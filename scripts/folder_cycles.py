#!/usr/bin/env python3
"""Fails when the source folders depend on each other in a cycle.

The folders are the architecture (docs/architecture.md, Layout): a folder may use the ones
below it, never one that uses it back. The graph is read from the `#include "..."` lines of
every .hpp/.cpp in the repository: an include naming a file of another folder is an edge from
the includer's folder to that file's folder (its innermost folder: core/jobs and core/policy
are two folders). Includes of files outside the repository (generated headers, system and
library headers) are not edges.

Usage: folder_cycles.py [ROOT]   (ROOT: the repository, default: this script's parent)
Prints the graph's edges, then each cycle found (exit 1) or "no cycles" (exit 0).
"""
import os
import re
import sys

SKIP = {"build", ".git", "node_modules"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_graph(root):
    edges = {}  # folder -> {folder: an example "file -> included file"}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP and not d.startswith("."))
        for name in sorted(filenames):
            if not name.endswith((".hpp", ".cpp", ".h", ".cc")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            src = os.path.dirname(rel)
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = os.path.normpath(m.group(1))
                    if not os.path.isfile(os.path.join(root, target)):
                        # Relative to the includer (tests' own helpers), else not ours.
                        target = os.path.normpath(os.path.join(src, m.group(1)))
                        if not os.path.isfile(os.path.join(root, target)):
                            continue
                    dst = os.path.dirname(target)
                    if dst != src:
                        edges.setdefault(src, {}).setdefault(dst, f"{rel} -> {target}")
    return edges


def cycles(edges):
    """Strongly connected components of more than one folder (Tarjan), each with one cycle."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
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
                found.append(sorted(comp))

    nodes = set(edges) | {d for ds in edges.values() for d in ds}
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def one_cycle(edges, comp):
    """A shortest cycle through the component's first folder (breadth-first), as a path."""
    start, members = comp[0], set(comp)
    prev, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges.get(v, {})):
            if w == start:  # back to the start: the path to v, then the edge v -> start
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return path[::-1] + [start]
            if w in members and w not in prev:
                prev[w] = v
                queue.append(w)
    return comp


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    edges = folder_graph(root)
    for src in sorted(edges):
        print(f"{src or '.'} -> {', '.join(sorted(d or '.' for d in edges[src]))}")
    found = cycles(edges)
    if not found:
        print("no cycles")
        return 0
    for comp in found:
        path = one_cycle(edges, comp)
        print(f"CYCLE among {', '.join(comp)}: {' -> '.join(path)}")
        for a, b in zip(path, path[1:]):
            print(f"  {a} -> {b}: {edges[a][b]}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
