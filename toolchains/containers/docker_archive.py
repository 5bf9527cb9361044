"""Wraps a root filesystem tar as a one-layer docker-archive (`docker load` input).

`docker import` stamps the image with the time of the import, so its image ID changes
on every import. Here the config carries a fixed creation time, so the image ID (the
sha256 of the config) is a function of the root filesystem's bytes alone and can be
recorded and checked like any other pin. Prints the image ID.

    python3 docker_archive.py ROOTFS_TAR OUT_TAR --created EPOCH [--tag T] [--env K=V]...
"""

import argparse
import datetime
import hashlib
import io
import json
import sys
import tarfile

_CHUNK = 1 << 20
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _member(name, size, mtime):
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = mtime
    info.mode = 0o644
    return info


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rootfs_tar")
    parser.add_argument("out_tar")
    parser.add_argument("--created", type=int, required=True, help="seconds since the epoch")
    parser.add_argument("--tag", action="append", default=[])
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the image's Env")
    args = parser.parse_args(argv)
    for env in args.env:
        if "=" not in env:
            parser.error(f"--env {env!r}: expected KEY=VALUE")

    layer = _sha256(args.rootfs_tar)
    created = datetime.datetime.fromtimestamp(args.created, datetime.timezone.utc)
    created = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": {"Env": [f"PATH={_PATH}", *args.env], "Cmd": ["/bin/bash"]},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer}"]},
        "history": [{"created": created, "created_by": "toolchains/containers/build_image.sh"}],
    }
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    image_id = hashlib.sha256(config_bytes).hexdigest()
    manifest = [
        {
            "Config": f"{image_id}.json",
            "RepoTags": args.tag,
            "Layers": [f"{layer}/layer.tar"],
        }
    ]
    manifest_bytes = json.dumps(manifest, sort_keys=True).encode()

    with tarfile.open(args.out_tar, "w", format=tarfile.PAX_FORMAT) as out:
        with open(args.rootfs_tar, "rb") as rootfs:
            size = rootfs.seek(0, io.SEEK_END)
            rootfs.seek(0)
            out.addfile(_member(f"{layer}/layer.tar", size, args.created), rootfs)
        for name, data in [(f"{image_id}.json", config_bytes), ("manifest.json", manifest_bytes)]:
            out.addfile(_member(name, len(data), args.created), io.BytesIO(data))
    print(f"sha256:{image_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
