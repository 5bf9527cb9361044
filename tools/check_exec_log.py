"""Checks where a build's spawns were routed, from Bazel's --execution_log_json_file.

    python3 tools/check_exec_log.py LOG --image docker://sha256:... [--gpu-test //pkg:t ...]

Every spawn must carry the runner image; `Pool=gpu` must be on exactly the CUDA capture
spawns (mnemonic WrpCaptureCuda) and the test spawns of the given gpu tests, and every
other spawn must be on Pool=default. Prints one line per spawn kind; exits 1 on a mismatch.
"""

import argparse
import collections
import json
import sys

_CAPTURE_MNEMONIC = "WrpCaptureCuda"


def spawns(path):
    text = open(path, encoding="utf-8").read()
    decoder, at = json.JSONDecoder(), 0
    while text[at:].strip():
        while text[at].isspace():
            at += 1
        spawn, at = decoder.raw_decode(text, at)
        yield spawn


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("--image", required=True, help="the container-image every spawn must carry")
    parser.add_argument("--gpu-test", action="append", default=[], help="a gpu-tagged test's label")
    args = parser.parse_args(argv)
    gpu_tests = {f"Testing {label}" for label in args.gpu_test}
    problems, seen = [], collections.Counter()
    for spawn in spawns(args.log):
        props = {p["name"]: p["value"] for p in spawn.get("platform", {}).get("properties", [])}
        what = spawn.get("progressMessage") or spawn.get("mnemonic")
        wants_gpu = spawn.get("mnemonic") == _CAPTURE_MNEMONIC or (
            spawn.get("mnemonic") == "TestRunner" and what in gpu_tests
        )
        pool = props.get("Pool")
        seen[(spawn.get("mnemonic"), pool, props.get("container-image") == args.image)] += 1
        if props.get("container-image") != args.image:
            problems.append(f"{what}: container-image {props.get('container-image')!r}, not {args.image}")
        if pool != ("gpu" if wants_gpu else "default"):
            problems.append(f"{what}: Pool={pool}, expected {'gpu' if wants_gpu else 'default'}")
    for (mnemonic, pool, image_ok), count in sorted(seen.items(), key=str):
        print(f"{count:4d} x {mnemonic:24s} Pool={pool:8s} image={'runner' if image_ok else 'OTHER'}")
    for problem in problems:
        print("MISMATCH:", problem)
    if not seen:
        print("MISMATCH: the execution log holds no spawn")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
