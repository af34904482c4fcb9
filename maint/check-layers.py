#!/usr/bin/env python3
"""The channel's layering, checked on the sources and on the built objects.

    maint/check-layers.py [--obj DIR] [--graph]

1. Includes: a file outside a folder of the channel includes, of that folder's headers,
   only its one public header (PUBLIC below); the collectives (src/coll) include only
   smheap_channel.h of the channel.
2. Calls: every call (or use of a variable) from one file of the channel, the collectives
   or the heap to another, read from the objects MPICH's build made (nm), goes down
   LAYERS, the channel's files from top to bottom; so there is no circle of files.  The
   heap's files, a library of their own, must form no circle either.
--graph prints the file-level graph (who uses whom, and through which symbols).
Exit status 1, with the offending includes or calls, if a rule is broken.
"""
import argparse
import collections
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CH = "src/mpid/ch3/channels/smheap"

# Each folder's one header for the rest of the channel (include/ holds the ch3 layer's,
# which MPICH itself includes by name, and the collectives' smheap_channel.h).
PUBLIC = {
    "include": {"mpidi_ch3_impl.h", "mpidi_ch3_pre.h", "mpidi_ch3_post.h",
                "mpid_nem_impl.h", "smheap_channel.h"},
    "part": {"smheap_part.h"},
    "rma": {"smheap_rma.h"},
    "link": {"smheap_link.h"},
    "net": {"smheap_net.h"},
    "packet": {"smheap_packet.h"},
    "node": {"smheap_node.h"},
    "copy": {"smheap_copy.h"},
    "reduce": {"smheap_reduce.h"},
    "mpit": {"smheap_mpit.h"},
}

# Files from top to bottom: a file may use only files below it.  Files on one line are
# beside each other and may not use one another.
LAYERS = [
    [f"{CH}/src/ch3_finalize.c"],
    [f"{CH}/src/ch3_init.c"],
    [f"{CH}/src/ch3_mpit.c"],
    ["src/coll/smheap_coll_comm.c"],
    ["src/coll/smheap_coll_nodes.c", "src/coll/smheap_coll_rooted.c",
     "src/coll/smheap_coll_reduce.c", "src/coll/smheap_coll_exchange.c"],
    ["src/coll/smheap_coll_tree.c"],
    ["src/coll/smheap_coll_block.c"],
    ["src/coll/smheap_coll_topology.c"],
    [f"{CH}/part/smheap_part.c"],
    [f"{CH}/part/smheap_part_data.c"],
    [f"{CH}/part/smheap_part_active.c", f"{CH}/rma/smheap_rma_window.c"],
    [f"{CH}/rma/smheap_rma_epoch.c", f"{CH}/rma/smheap_rma_hold.c"],
    [f"{CH}/rma/smheap_rma_lock.c"],
    [f"{CH}/src/ch3_rndv.c"],
    [f"{CH}/src/ch3_progress.c"],
    [f"{CH}/src/ch3_isend.c"],
    [f"{CH}/link/smheap_link.c"],
    [f"{CH}/net/smheap_net.c"],
    [f"{CH}/net/smheap_net_sock.c", f"{CH}/net/smheap_net_ofi.c"],
    [f"{CH}/net/smheap_ofi_recv.c"],
    [f"{CH}/net/smheap_ofi_send.c"],
    [f"{CH}/net/smheap_ofi_fabric.c"],
    [f"{CH}/net/smheap_ofi_lib.c"],
    [f"{CH}/packet/smheap_packet.c"],
    [f"{CH}/node/smheap_queue.c", f"{CH}/node/smheap_pace.c"],
    [f"{CH}/node/smheap_doorbell.c", f"{CH}/copy/smheap_copy.c"],
    [f"{CH}/copy/smheap_cma.c", f"{CH}/copy/smheap_cache.c", f"{CH}/reduce/smheap_reduce.c",
     f"{CH}/src/ch3_heap.c"],
    [f"{CH}/mpit/smheap_counters.c"],
]
RANK = {f: i for i, files in enumerate(LAYERS) for f in files}


def sources(*dirs):
    for d in dirs:
        for root, _, files in os.walk(os.path.join(TOP, d)):
            for f in files:
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(root, f), TOP)


def folder_of(path):
    """The channel folder a file is in, or None."""
    if not path.startswith(CH + "/"):
        return None
    return path[len(CH) + 1:].split("/")[0]


def check_includes():
    headers = {}  # header name -> folder
    for path in sources(CH):
        if path.endswith(".h"):
            headers[os.path.basename(path)] = folder_of(path)
    bad = []
    for path in sources(CH, "src/coll"):
        mine = folder_of(path)
        with open(os.path.join(TOP, path)) as fh:
            for n, line in enumerate(fh, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m or m.group(1) not in headers:
                    continue
                name, theirs = m.group(1), headers[m.group(1)]
                if theirs == mine:
                    continue
                if mine is None and name != "smheap_channel.h" and not name.startswith("mpidi_ch3_"):
                    bad.append(f"{path}:{n}: the collectives include {name} "
                               f"({CH}/{theirs}/); only smheap_channel.h is theirs")
                elif mine is not None and name not in PUBLIC.get(theirs, ()):
                    bad.append(f"{path}:{n}: includes {name}, inside {theirs}/; "
                               f"use {' or '.join(sorted(PUBLIC[theirs]))}")
    return bad


def objects(obj):
    """(source path, object file) of every object of the channel, collectives and heap."""
    for d in (CH, "src/coll", "src/heap"):
        for root, _, files in os.walk(os.path.join(obj, d)):
            if os.path.basename(root) != ".libs":
                continue
            for f in files:
                m = re.match(r"lib_libmpi_la-(.+)\.o$", f)
                if m:
                    src = os.path.relpath(os.path.join(os.path.dirname(root), m.group(1) + ".c"), obj)
                    yield src, os.path.join(root, f)


def nm(path, *args):
    out = subprocess.run(["nm", *args, path], capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def call_graph(obj):
    defined, used = {}, {}
    for src, o in objects(obj):
        for line in nm(o, "--defined-only"):
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBRVG":
                defined[parts[2]] = src
        used[src] = {line.split()[-1] for line in nm(o, "-u")}
    graph = collections.defaultdict(lambda: collections.defaultdict(set))
    for src, syms in used.items():
        for s in syms:
            dst = defined.get(s)
            if dst and dst != src:
                graph[src][dst].add(s)
    return set(used), graph


def cycles(graph, nodes):
    """A circle of files among nodes, if any (depth-first search)."""
    state = {}

    def visit(n, stack):
        state[n] = 1
        stack.append(n)
        for m in graph.get(n, {}):
            if m not in nodes:
                continue
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m, stack)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(nodes):
        if n not in state:
            c = visit(n, [])
            if c:
                return c
    return None


def check_calls(obj, show):
    files, graph = call_graph(obj)
    bad = []
    if not files:
        return [f"no objects of the channel under {obj}: build first (maint/setup.sh)"]
    for f in sorted(files):
        if not f.startswith("src/heap/") and f not in RANK:
            bad.append(f"{f}: not placed in LAYERS of maint/check-layers.py")
    for src in sorted(graph):
        for dst, syms in sorted(graph[src].items()):
            if show:
                print(f"{src} -> {dst}: {' '.join(sorted(syms))}")
            if src in RANK and dst in RANK and RANK[dst] <= RANK[src]:
                bad.append(f"{src} uses {dst}, which is not below it: {' '.join(sorted(syms))}")
            if src.startswith("src/heap/") != dst.startswith("src/heap/") and src.startswith("src/heap/"):
                bad.append(f"{src} (the heap) uses {dst} of MPICH's side: {' '.join(sorted(syms))}")
    heap = {f for f in files if f.startswith("src/heap/")}
    circle = cycles(graph, heap)
    if circle:
        bad.append("a circle of the heap's files: " + " -> ".join(circle))
    circle = cycles(graph, set(files))
    if circle:
        bad.append("a circle of files: " + " -> ".join(circle))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--obj", default=os.path.join(TOP, "build", "smheap-obj"),
                    help="MPICH's build directory (default build/smheap-obj)")
    ap.add_argument("--graph", action="store_true", help="print the file-level graph")
    args = ap.parse_args()
    bad = check_includes() + check_calls(args.obj, args.graph)
    for b in bad:
        print("not layered: " + b, file=sys.stderr)
    if not bad:
        print(f"layers: {len(RANK)} files of the channel and the collectives in {len(LAYERS)} "
              "layers, every call going down; no circle of files (the heap's included)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
