"""Checks on a running reference cluster that need a gRPC client of its own (run with the
cluster's venv: remote/cluster.py made it). Prints one line per check; exit 1 if any failed.

    cluster_probe.py STATE auth|client-token|corrupt-upload|listen|queue-token|queue-page
    cluster_probe.py STATE queue-lists OUTPUT WORKER   (an action of a build in flight)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import ssl
import sys
import time
import urllib.error
import urllib.request

import grpc
import jwt
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc
from buildgrid._protos.build.buildgrid import introspection_pb2, introspection_pb2_grpc
from buildgrid._protos.google.devtools.remoteworkers.v1test2 import bots_pb2, bots_pb2_grpc
from buildgrid._protos.google.longrunning import operations_pb2, operations_pb2_grpc
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


def call(method, request, token: str) -> str:
    try:
        method(request, metadata=(("authorization", "Bearer " + token),), timeout=10)
        return "OK"
    except grpc.RpcError as error:
        return error.code().name


def check_queue_token(state: str, config: dict) -> list[tuple[str, bool]]:
    """The queue page's token reads the queue and nothing else (remote/bgd-acl.yml)."""
    with open(os.path.join(state, "secrets", "queue.token")) as f:
        token = f.read().strip()
    chan = channel(state, config)
    reads = {
        "ListOperations": call(
            operations_pb2_grpc.OperationsStub(chan).ListOperations,
            operations_pb2.ListOperationsRequest(name="main", filter="platform=Pool:default"),
            token,
        ),
        "ListWorkers": call(
            introspection_pb2_grpc.IntrospectionStub(chan).ListWorkers,
            introspection_pb2.ListWorkersRequest(instance_name="main"),
            token,
        ),
    }
    blob = re_pb2.Digest(hash=hashlib.sha256(b"x").hexdigest(), size_bytes=1)
    writes = {
        "Execute": call(
            lambda *a, **k: list(re_grpc.ExecutionStub(chan).Execute(*a, **k)),
            re_pb2.ExecuteRequest(instance_name="main", action_digest=blob),
            token,
        ),
        "BatchUpdateBlobs": call(
            re_grpc.ContentAddressableStorageStub(chan).BatchUpdateBlobs,
            re_pb2.BatchUpdateBlobsRequest(
                instance_name="main",
                requests=[re_pb2.BatchUpdateBlobsRequest.Request(digest=blob, data=b"x")],
            ),
            token,
        ),
        "UpdateActionResult": call(
            re_grpc.ActionCacheStub(chan).UpdateActionResult,
            re_pb2.UpdateActionResultRequest(instance_name="main", action_digest=blob),
            token,
        ),
        "CreateBotSession": call(
            bots_pb2_grpc.BotsStub(chan).CreateBotSession,
            bots_pb2.CreateBotSessionRequest(parent="main", bot_session=bots_pb2.BotSession(bot_id="probe")),
            token,
        ),
    }
    return [
        (f"the queue token may read the queue ({reads})", set(reads.values()) == {"OK"}),
        (
            f"and may not execute, upload, write the action cache or be a bot ({writes})",
            set(writes.values()) == {"UNAUTHENTICATED"},
        ),
    ]


def check_client_token(state: str, config: dict) -> list[tuple[str, bool]]:
    """Only workers write results (remote/bgd-acl.yml): the client token reads the action cache,
    uploads and executes, and is refused UpdateActionResult and bot sessions, which the worker
    token may call with the very same requests (so a refusal is the ACL's, not the request's)."""
    tokens = {}
    for subject in ("bazel", "worker"):
        with open(os.path.join(state, "secrets", f"{subject}.token")) as f:
            tokens[subject] = f.read().strip()
    chan = channel(state, config)
    # An action no build has: the worker's entry for it misleads nobody.
    action = re_pb2.Digest(hash=hashlib.sha256(os.urandom(32)).hexdigest(), size_bytes=32)
    update = re_pb2.UpdateActionResultRequest(
        instance_name="main", action_digest=action, action_result=re_pb2.ActionResult(exit_code=0)
    )
    update_result = re_grpc.ActionCacheStub(chan).UpdateActionResult
    create_session = bots_pb2_grpc.BotsStub(chan).CreateBotSession

    def session(token: str) -> str:
        # A bot with no devices serves no pool: BuildGrid lets the worker token through and its
        # scheduler then refuses the session (FAILED_PRECONDITION, "Could not find property set
        # for {}"), so no session is left that a job could be given to.
        request = bots_pb2.CreateBotSessionRequest(
            parent="main",
            bot_session=bots_pb2.BotSession(bot_id=f"acl-probe-{os.getpid()}", status=bots_pb2.OK),
        )
        try:
            create_session(request, metadata=(("authorization", "Bearer " + token),), timeout=10)
            return "OK"
        except grpc.RpcError as error:
            return error.code().name

    client = {
        "GetActionResult": call(
            re_grpc.ActionCacheStub(chan).GetActionResult,
            re_pb2.GetActionResultRequest(instance_name="main", action_digest=action),
            tokens["bazel"],
        ),
        "FindMissingBlobs": call(
            re_grpc.ContentAddressableStorageStub(chan).FindMissingBlobs,
            re_pb2.FindMissingBlobsRequest(instance_name="main", blob_digests=[action]),
            tokens["bazel"],
        ),
    }
    client_update = call(update_result, update, tokens["bazel"])
    client_session = session(tokens["bazel"])
    worker_update = call(update_result, update, tokens["worker"])
    worker_session = session(tokens["worker"])
    readback = call(
        re_grpc.ActionCacheStub(chan).GetActionResult,
        re_pb2.GetActionResultRequest(instance_name="main", action_digest=action),
        tokens["bazel"],
    )
    return [
        (
            f"the client token reads the action cache and the CAS ({client})",
            client == {"GetActionResult": "NOT_FOUND", "FindMissingBlobs": "OK"},
        ),
        (
            f"the client token may not write the action cache (UpdateActionResult: {client_update})",
            client_update == "UNAUTHENTICATED",
        ),
        (
            f"the client token may not open a bot session (CreateBotSession: {client_session})",
            client_session == "UNAUTHENTICATED",
        ),
        (
            f"the worker token may, with the same requests (UpdateActionResult: {worker_update}, "
            f"then read back by the client: {readback}; CreateBotSession: {worker_session}, past the "
            "ACL to the scheduler, which serves no bot without a pool)",
            worker_update == "OK" and readback == "OK" and worker_session in ("OK", "FAILED_PRECONDITION"),
        ),
    ]


def fetch_page(state: str, config: dict, path: str, token: str | None) -> tuple[int, str]:
    """GET the queue page over TLS (the cluster's CA), with the token as a bearer."""
    context = ssl.create_default_context(cafile=os.path.join(state, "tls", "ca.pem"))
    request = urllib.request.Request(f"https://localhost:{config['queue_port']}{path}")
    if token is not None:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, ""


def check_queue_page(state: str, config: dict) -> list[tuple[str, bool]]:
    with open(os.path.join(state, "secrets", "queue.token")) as f:
        token = f.read().strip()
    with open(os.path.join(state, "secrets", "bazel.token")) as f:
        other = f.read().strip()
    status, body = fetch_page(state, config, "/queue.json", token)
    pools = json.loads(body).get("pools", {}) if status == 200 else {}
    return [
        (
            f"the queue page answers the queue token over TLS ({status}, pools {sorted(pools)})",
            "default" in pools,
        ),
        ("and refuses a request without it (401)", fetch_page(state, config, "/", None)[0] == 401),
        ("or with another token (401)", fetch_page(state, config, "/queue.json", other)[0] == 401),
    ]


def check_queue_lists(state: str, config: dict, output: str, worker: str) -> list[tuple[str, bool]]:
    """The page lists the action that writes OUTPUT, running or queued, with its pool; running
    on WORKER (a bot of that name) once it runs. Polled for a while: BuildGrid marks the job
    running when it assigns it."""
    with open(os.path.join(state, "secrets", "queue.token")) as f:
        token = f.read().strip()
    deadline = time.monotonic() + 15
    while True:
        listed = json.loads(fetch_page(state, config, "/queue.json", token)[1] or "{}").get("operations", [])
        ours = [op for op in listed if any(out.endswith(output) for out in op["outputs"])]
        if any(op["stage"] == "running" for op in ours) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    html_page = fetch_page(state, config, "/", token)[1]
    rows = re.findall(r'<tr class="(running|queued)">(.*?)</tr>', html_page, re.S)
    described = ", ".join(
        f"{op['stage']} Pool={op['pool']} on {op['worker'] or '-'} {op['age_s']} s" for op in ours
    )
    return [
        (
            f"the queue page's JSON lists the action of {output} ({described or 'not listed'})",
            any(
                op["pool"] == "default"
                and (
                    op["stage"] == "queued"
                    or (op["stage"] == "running" and op["worker"].startswith(worker + "-"))
                )
                for op in ours
            ),
        ),
        (
            "and its HTML, with its pool",
            any(output in row and "Pool=default" in row for _, row in rows),
        ),
    ]


def check_listen(state: str, config: dict) -> list[tuple[str, bool]]:
    """Every socket the cluster listens on is bound to loopback."""
    ports = {config[k] for k in ("port", "pg_port", "redis_port", "proxy_port", "queue_port") if k in config}
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
    state, what, *args = sys.argv[1:]
    with open(os.path.join(state, "cluster.json")) as f:
        config = json.load(f)
    checks = {
        "auth": check_auth,
        "corrupt-upload": check_corrupt_upload,
        "listen": check_listen,
        "queue-token": check_queue_token,
        "client-token": check_client_token,
        "queue-page": check_queue_page,
        "queue-lists": check_queue_lists,
    }[what]
    failed = 0
    for description, ok in checks(state, config, *args):
        print(f"{'PASS' if ok else 'FAIL'}: {description}")
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
