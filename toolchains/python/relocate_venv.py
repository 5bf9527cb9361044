"""Makes a freshly installed venv's bytes independent of where it was made.

Run by wrp_python_venv (repositories.bzl) after pip install, as `python relocate_venv.py VENV`.
Every file of the venv is an input of the capture/compile/pack actions, so a file that
names the venv's absolute path (the output base's) would give two checkouts, output bases
or users different action keys and no shared cache hit. Such files are:

- bin/activate*: deleted (nothing here sources them);
- pyvenv.cfg's `command = ... -m venv /abs/venv` line (Python 3.11+): dropped;
- console and data scripts in bin/ whose shebang names /abs/venv/bin/python*: the shebang
  is replaced by a /bin/sh one that starts the python3 beside the script, so pytest, pip,
  ... still work from any path;
- the RECORD lines of those scripts (their sha256 and size): rewritten to the new bytes;
- __pycache__ (pip is run with --no-compile; the venv module's own pip is compiled by
  ensurepip): deleted. The actions do not take .pyc files (the BUILD file leaves them
  out), so this only keeps the tree itself the same.

Prints what it changed as JSON; fails if any file still names the venv's path.
"""

import base64
import hashlib
import json
import os
import shutil
import sys

# A shebang that sh runs and Python reads as a string literal: sh execs the venv's python3
# (found beside the script) on the script; Python skips the string.
SHEBANG = b"#!/bin/sh\n'''exec' \"$(dirname -- \"$0\")/python3\" \"$0\" \"$@\"\n' '''\n"


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main(venv: str) -> None:
    venv = os.path.abspath(venv)
    needle = venv.encode()
    changed = {"deleted": [], "shebangs": [], "records": [], "pycache_dirs": 0}
    bindir = os.path.join(venv, "bin")
    rewritten = set()
    for name in sorted(os.listdir(bindir)):
        path = os.path.join(bindir, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        if name.lower().startswith("activate"):
            os.remove(path)
            changed["deleted"].append("bin/" + name)
            continue
        with open(path, "rb") as f:
            data = f.read()
        if not data.startswith(b"#!") or needle not in data.split(b"\n", 1)[0]:
            continue
        first, _, rest = data.partition(b"\n")
        if needle in rest:
            sys.exit(f"relocate_venv: {path} names the venv beyond its shebang")
        with open(path, "wb") as f:
            f.write(SHEBANG + rest)
        rewritten.add(os.path.realpath(path))
        changed["shebangs"].append("bin/" + name)

    cfg = os.path.join(venv, "pyvenv.cfg")
    with open(cfg) as f:
        lines = f.read().splitlines(keepends=True)
    with open(cfg, "w") as f:
        f.writelines(line for line in lines if not line.startswith("command ="))

    for root, dirs, files in os.walk(venv):
        if "__pycache__" in dirs:
            shutil.rmtree(os.path.join(root, "__pycache__"))
            dirs.remove("__pycache__")
            changed["pycache_dirs"] += 1
        if not root.endswith(".dist-info") or "RECORD" not in files:
            continue
        record = os.path.join(root, "RECORD")
        site = os.path.dirname(root)
        with open(record, "rb") as f:
            rows = f.read().splitlines(keepends=True)
        out = []
        for row in rows:
            body = row.rstrip(b"\r\n")
            rel = body.split(b",")[0].decode()
            target = os.path.realpath(os.path.join(site, rel))
            if target in rewritten:
                with open(target, "rb") as f:
                    data = f.read()
                row = f"{rel},{record_hash(data)},{len(data)}".encode() + row[len(body) :]
            out.append(row)
        if out != rows:
            with open(record, "wb") as f:
                f.write(b"".join(out))
            changed["records"].append(os.path.relpath(record, venv))

    left = []
    for root, _, files in os.walk(venv):
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path):
                continue
            with open(path, "rb") as f:
                if needle in f.read():
                    left.append(os.path.relpath(path, venv))
    if left:
        sys.exit("relocate_venv: these files still name " + venv + ": " + ", ".join(sorted(left)))
    print(json.dumps(changed, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1])
