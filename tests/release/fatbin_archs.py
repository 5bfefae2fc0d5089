#!/usr/bin/env python3
"""Lists the GPU code a CUDA library carries, from its .nv_fatbin section, and checks it against a
CMAKE_CUDA_ARCHITECTURES list ("NN": real code and PTX, "NN-real": code, "NN-virtual": PTX).

    tests/release/fatbin_archs.py LIB [ARCHITECTURES]

Prints "elf: sm_61 sm_86  ptx: sm_50 ..." and, with ARCHITECTURES, exits 1 when the library lacks
one or carries one not asked for. Why not cuobjdump: the host's CUDA 13 is nvcc alone, and the
cuda11 root's cuobjdump 11.2 cannot read CUDA 13 fatbins ("Support for 'sm_4' has been removed").
The section is a run of fatbin containers (magic 0xBA55ED50, one per CUDA object), each a run of
entries whose header gives the kind (1 PTX, 2 ELF) and the SM; on the cuda11 artifact this lists
what cuobjdump 11.2 lists (docs/RELEASING.md).
"""
import os
import struct
import subprocess
import sys
import tempfile

MAGIC = 0xBA55ED50
KINDS = {1: "ptx", 2: "elf"}


def fatbin_section(lib):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "fatbin")
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", lib, out], check=True)
        with open(out, "rb") as f:
            return f.read()


def entries(data):
    """(kind, sm) of every entry of every container."""
    found = set()
    at = 0
    while at + 16 <= len(data):
        magic, _version, header_size, fat_size = struct.unpack_from("<IHHQ", data, at)
        if magic != MAGIC:
            at += 8  # containers are 8-byte aligned
            continue
        entry, end = at + header_size, at + header_size + fat_size
        while entry + 32 <= end:
            kind, _v, entry_header, padded_payload = struct.unpack_from("<HHII", data, entry)
            sm = struct.unpack_from("<I", data, entry + 28)[0]
            if entry_header == 0:
                raise ValueError("malformed fatbin entry at offset %d" % entry)
            found.add((KINDS.get(kind, "kind%d" % kind), sm))
            entry += entry_header + padded_payload
        at = end
    return found


def expected(architectures):
    want = set()
    for a in filter(None, architectures.split(";")):
        number, _, suffix = a.partition("-")
        if suffix in ("", "real"):
            want.add(("elf", int(number)))
        if suffix in ("", "virtual"):
            want.add(("ptx", int(number)))
    return want


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    found = entries(fatbin_section(sys.argv[1]))
    listing = lambda kind, s: " ".join("sm_%d" % sm for k, sm in sorted(s) if k == kind) or "none"
    print("elf: %s  ptx: %s" % (listing("elf", found), listing("ptx", found)))
    if len(sys.argv) == 3:
        want = expected(sys.argv[2])
        if found != want:
            print("FAIL: %s asked for elf: %s  ptx: %s" % (sys.argv[2], listing("elf", want), listing("ptx", want)))
            sys.exit(1)


if __name__ == "__main__":
    main()
