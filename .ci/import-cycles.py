#!/usr/bin/env python3
"""Lists import circles between the source files of each crate: file A names an item of file B
(`crate::…`, `super::…`, `self::…`, or a child module it declares) and B, directly or through
others, names one of A. A module re-exporting its own children (`pub use child::Item;`, the
facade of a folder) does not depend on them by that; its code naming a child does. Test files
(`tests.rs`, `tests/`) are left out. Exit 1 when there is one."""
import os, re, sys

def modules(src):
    """module path (tuple) -> file, for every .rs file under src."""
    out = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith('.rs'):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)[:-3].split(os.sep)
            if rel[-1] in ('mod', 'lib', 'main'):
                rel = rel[:-1]
            if 'tests' in rel:
                continue
            out[tuple(rel)] = os.path.join(root, f)
    return out

def strip(text):
    text = re.sub(r'//[^\n]*', '', text)
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    # `#[cfg(test)] mod tests { … }` blocks inline: drop from the marker to the end of the file.
    m = re.search(r'#\[cfg\(test\)\]\s*mod\s+\w+\s*\{', text)
    return text[:m.start()] if m else text

PATH = re.compile(r'\b(crate|super|self)((?:::\w+)+)')
GROUP = re.compile(r'\b(crate|super|self)((?:::\w+)*)::\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}')

REEXPORT = re.compile(r'\bpub(?:\([^)]*\))?\s+use\s+(?:self::)?(\w+)::[^;]*;')

def targets(mod, text, mods):
    found = set()
    text = REEXPORT.sub(lambda m: '' if mod + (m.group(1),) in mods else m.group(0), text)
    def resolve(head, parts):
        if head == 'crate':
            base = ()
        elif head == 'self':
            base = mod
        else:
            base = mod[:-1]
            while parts and parts[0] == 'super':
                base, parts = base[:-1], parts[1:]
        full = base + tuple(parts)
        for n in range(len(full), -1, -1):
            if full[:n] in mods:
                return full[:n]
        return None
    for head, prefix, inner in GROUP.findall(text):
        for item in re.split(r'[,\s]+', re.sub(r'\{[^}]*\}', '', inner)):
            item = item.split(' as ')[0].strip()
            if item:
                t = resolve(head, [p for p in (prefix + '::' + item).split('::') if p])
                if t is not None:
                    found.add(t)
    for head, rest in PATH.findall(text):
        t = resolve(head, [p for p in rest.split('::') if p])
        if t is not None:
            found.add(t)
    for child in re.findall(r'\bmod\s+(\w+)\s*;', text):
        pass  # declaring a child is not using it
    for child in set(re.findall(r'(?<![:\w])(\w+)::', text)):
        if mod + (child,) in mods:
            found.add(mod + (child,))
    found.discard(mod)
    return found

def cycles(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)
    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out

def main(srcs):
    bad = 0
    for src in srcs:
        mods = modules(src)
        graph = {m: targets(m, strip(open(f).read()), mods) for m, f in mods.items()}
        for comp in cycles(graph):
            bad += 1
            names = sorted('::'.join(m) or 'lib' for m in comp)
            print(f'{src}: an import circle between {", ".join(names)}')
    return 1 if bad else 0

if __name__ == '__main__':
    sys.exit(main(sys.argv[1:] or ['wop-sdk/src', 'wop-sdk-host/src', 'wop-sdk-macros/src', 'wop-sdk-rules/src',
                              'wop-sdk-node/src', 'examples/book_ai', 'tests/support']))
