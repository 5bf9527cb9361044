"""Checks on a running reference cluster that need a gRPC client of its own (run with the
cluster's venv: remote/cluster.py made it). Prints one line per check; exit 1 if any failed.

    cluster_probe.py STATE auth|corrupt-upload|listen
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time

import grpc
import jwt
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc
from buildgrid._protos.google.rpc import code_pb2


def channel(state: str, config: dict, tls: bool = True) -> grpc.Channel:
    address = f"127.0.0.1:{config['port']}"
    if not tls:
        return grpc.insecure_channel(address)
    with open(os.path.join(state, "tls", "ca.pem"), "rb") as f:
        credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
    # The certificate names localhost and 127.0.0.1.
    return grpc.secure_channel(address, credentials)


def capabilities(chan: grpc.Channel, token: str | None) -> str:
    metadata = (("authorization", "Bearer " + token),) if token else ()
    try:
        re_grpc.CapabilitiesStub(chan).GetCapabilities(
            re_pb2.GetCapabilitiesRequest(instance_name="main"), metadata=metadata, timeout=10
        )
        return "OK"
    except grpc.RpcError as error:
        return error.code().name


def check_auth(state: str, config: dict) -> list[tuple[str, bool]]:
    with open(os.path.join(state, "secrets", "bazel.token")) as f:
        token = f.read().strip()
    forged = jwt.encode(
        {"sub": "bazel", "exp": int(time.time()) + 3600},
        "not the cluster's secret, but as long as one",
        algorithm="HS256",
    )
    with open(os.path.join(state, "secrets", "jwt.secret")) as f:
        expired = jwt.encode(
            {"sub": "bazel", "exp": int(time.time()) - 60}, f.read().strip(), algorithm="HS256"
        )
    secure = channel(state, config)
    results = [
        ("the client token is accepted", capabilities(secure, token) == "OK"),
        (
            "a call without a token is refused (UNAUTHENTICATED)",
            capabilities(secure, None) == "UNAUTHENTICATED",
        ),
        ("a token signed with another key is refused", capabilities(secure, forged) == "UNAUTHENTICATED"),
        ("an expired token is refused", capabilities(secure, expired) == "UNAUTHENTICATED"),
    ]
    plaintext = capabilities(channel(state, config, tls=False), token)
    results.append((f"a plaintext (non-TLS) call gets nothing ({plaintext})", plaintext != "OK"))
    return results


def check_corrupt_upload(state: str, config: dict) -> list[tuple[str, bool]]:
    with open(os.path.join(state, "secrets", "bazel.token")) as f:
        metadata = (("authorization", "Bearer " + f.read().strip()),)
    cas = re_grpc.ContentAddressableStorageStub(channel(state, config))
    data = b"what the client claims to upload"
    lie = re_pb2.Digest(hash=hashlib.sha256(b"something else").hexdigest(), size_bytes=len(data))
    response = cas.BatchUpdateBlobs(
        re_pb2.BatchUpdateBlobsRequest(
            instance_name="main", requests=[re_pb2.BatchUpdateBlobsRequest.Request(digest=lie, data=data)]
        ),
        metadata=metadata,
        timeout=30,
    )
    code = response.responses[0].status.code
    missing = cas.FindMissingBlobs(
        re_pb2.FindMissingBlobsRequest(instance_name="main", blob_digests=[lie]),
        metadata=metadata,
        timeout=30,
    )
    return [
        (f"a blob whose bytes do not match its digest is refused (status {code})", code != code_pb2.OK),
        ("and is not stored under that digest", len(missing.missing_blob_digests) == 1),
    ]


def check_listen(state: str, config: dict) -> list[tuple[str, bool]]:
    """Every socket the cluster listens on is bound to loopback."""
    ports = {config[k] for k in ("port", "pg_port", "redis_port", "proxy_port")}
    bound: dict[int, set[str]] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                local, st = fields[1], fields[3]
                if st != "0A":  # LISTEN
                    continue
                address, port = local.rsplit(":", 1)
                if int(port, 16) in ports:
                    bound.setdefault(int(port, 16), set()).add(address)
    # 127.0.0.1, ::1, and 127.0.0.1 as an IPv4-mapped IPv6 address (gRPC binds that).
    loopback = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}
    return [
        (
            f"port {port} listens on loopback only ({sorted(bound.get(port, set()))})",
            bool(bound.get(port)) and bound[port] <= loopback,
        )
        for port in sorted(ports)
    ]


def main() -> int:
    state, what = sys.argv[1], sys.argv[2]
    with open(os.path.join(state, "cluster.json")) as f:
        config = json.load(f)
    checks = {"auth": check_auth, "corrupt-upload": check_corrupt_upload, "listen": check_listen}[what]
    failed = 0
    for description, ok in checks(state, config):
        print(f"{'PASS' if ok else 'FAIL'}: {description}")
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
