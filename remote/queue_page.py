"""The reference cluster's queue page: the actions BuildGrid has queued and running, per pool,
with their age and worker, as HTML (refreshing itself) and JSON. remote/cluster.py up starts it
in the cluster's venv; remote/README.md ("Queue page") says how to open it.

Everything on it comes from BuildGrid's own API, over TLS with a token of the page's own
(subject `queue`, which BuildGrid's ACL lets read and nothing else: remote/bgd-acl.yml):
  - Operations.ListOperations, filtered `platform=Pool:<pool>&stage!=COMPLETED` per pool
    (the filter language BuildGrid's web UI uses): stage, action digest, worker, timestamps
  - Introspection.ListWorkers: the bots and what each is running
  - CAS BatchReadBlobs: each Action and its Command (content-addressed: read once), to name
    an action by its outputs, since Bazel 4.2 sends no target or mnemonic in its metadata
It keeps no state but that cache and never touches BuildGrid's database.

The page itself has the server's policy: TLS with the cluster's certificate and the same
token, as `Authorization: Bearer <token>` or once as `?token=<token>`, which sets a cookie.

    queue_page.py --state STATE --listen ADDR --port PORT --server HOST:PORT
"""

from __future__ import annotations

import argparse
import datetime
import hmac
import html
import http.server
import json
import os
import socket
import ssl
import sys
import time
import urllib.parse

import grpc
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc
from buildgrid._protos.build.buildgrid import introspection_pb2, introspection_pb2_grpc
from buildgrid._protos.google.longrunning import operations_pb2, operations_pb2_grpc

INSTANCE = "main"
COOKIE = "rules_warp_queue"
STAGES = {re_pb2.ExecutionStage.QUEUED: "queued", re_pb2.ExecutionStage.EXECUTING: "running"}
BOT_STATUS = {0: "unknown", 1: "ok", 2: "unhealthy", 3: "rebooting", 4: "terminating"}


class BuildGrid:
    """The read-only calls the page makes, with the queue token."""

    def __init__(self, state: str, server: str) -> None:
        self.state = state
        with open(os.path.join(state, "tls", "ca.pem"), "rb") as f:
            credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
        # The certificate names localhost, 127.0.0.1 and the --listen address.
        channel = grpc.secure_channel(server, credentials)
        self.operations = operations_pb2_grpc.OperationsStub(channel)
        self.introspection = introspection_pb2_grpc.IntrospectionStub(channel)
        self.cas = re_grpc.ContentAddressableStorageStub(channel)
        self.described: dict[str, dict] = {}

    def token(self) -> str:
        # Read each time: `cluster.py up` renews it before it expires.
        with open(os.path.join(self.state, "secrets", "queue.token")) as f:
            return f.read().strip()

    def metadata(self) -> tuple:
        return (("authorization", "Bearer " + self.token()),)

    def list_operations(self, pool: str) -> list[operations_pb2.Operation]:
        found, page_token = [], ""
        while True:
            response = self.operations.ListOperations(
                operations_pb2.ListOperationsRequest(
                    name=INSTANCE,
                    filter=f"platform=Pool:{pool} & stage!=COMPLETED",
                    page_size=200,
                    page_token=page_token,
                ),
                metadata=self.metadata(),
                timeout=10,
            )
            found += response.operations
            page_token = response.next_page_token
            if not page_token or len(found) >= 1000:
                return found

    def list_workers(self) -> list[introspection_pb2.RegisteredWorker]:
        response = self.introspection.ListWorkers(
            introspection_pb2.ListWorkersRequest(instance_name=INSTANCE, page_size=100),
            metadata=self.metadata(),
            timeout=10,
        )
        return list(response.workers)

    def read(self, digests: list[re_pb2.Digest]) -> dict[str, bytes]:
        found = {}
        # In batches: a Command can be large, a reply must stay under gRPC's 4 MiB.
        for start in range(0, len(digests), 50):
            response = self.cas.BatchReadBlobs(
                re_pb2.BatchReadBlobsRequest(instance_name=INSTANCE, digests=digests[start : start + 50]),
                metadata=self.metadata(),
                timeout=10,
            )
            found.update({r.digest.hash: r.data for r in response.responses if r.status.code == 0})
        return found

    def describe(self, digests: list[re_pb2.Digest]) -> None:
        """What each action writes and runs, from its Action and Command in the CAS."""
        missing = {d.hash: d for d in digests if d.hash not in self.described}
        actions = {}
        for blob_hash, data in self.read(list(missing.values())).items():
            actions[blob_hash] = re_pb2.Action.FromString(data)
        commands = self.read([a.command_digest for a in actions.values()])
        for blob_hash, action in actions.items():
            command = re_pb2.Command.FromString(commands.get(action.command_digest.hash, b""))
            outputs = list(command.output_paths) or [*command.output_files, *command.output_directories]
            self.described[blob_hash] = {
                "outputs": outputs,
                "program": os.path.basename(command.arguments[0]) if command.arguments else "",
            }
        if len(self.described) > 5000:
            self.described.clear()


def seconds_since(timestamp, now: float) -> float | None:
    return round(now - timestamp.ToNanoseconds() / 1e9, 1) if timestamp.seconds else None


def snapshot(grid: BuildGrid, pools: dict[str, int]) -> dict:
    """The queue now: each unfinished operation of each pool, and the workers."""
    now = time.time()
    result: dict = {
        "instance": INSTANCE,
        "time": datetime.datetime.fromtimestamp(now, datetime.timezone.utc).isoformat(timespec="seconds"),
        "pools": {},
        "operations": [],
        "workers": [],
        "errors": [],
    }
    for pool, workers in sorted(pools.items()):
        counts = {"workers": workers, "queued": 0, "running": 0}
        try:
            operations = grid.list_operations(pool)
        except grpc.RpcError as error:
            result["errors"].append(f"ListOperations (Pool={pool}): {error.code().name} {error.details()}")
            operations = []
        for operation in operations:
            metadata = re_pb2.ExecuteOperationMetadata()
            operation.metadata.Unpack(metadata)
            stage = STAGES.get(metadata.stage, re_pb2.ExecutionStage.Value.Name(metadata.stage).lower())
            counts[stage] = counts.get(stage, 0) + 1
            executed = metadata.partial_execution_metadata
            result["operations"].append(
                {
                    "operation": operation.name,
                    "pool": pool,
                    "stage": stage,
                    "action_digest": f"{metadata.action_digest.hash}/{metadata.action_digest.size_bytes}",
                    "worker": executed.worker,
                    "age_s": seconds_since(executed.queued_timestamp, now),
                    "running_s": seconds_since(executed.worker_start_timestamp, now)
                    if stage == "running"
                    else None,
                    "_digest": metadata.action_digest,
                }
            )
        result["pools"][pool] = counts
    try:
        grid.describe([op["_digest"] for op in result["operations"]])
    except grpc.RpcError as error:
        result["errors"].append(f"BatchReadBlobs: {error.code().name} {error.details()}")
    for op in result["operations"]:
        digest = op.pop("_digest")
        op.update(grid.described.get(digest.hash, {"outputs": [], "program": ""}))
    # Running first, then the longest waiting.
    result["operations"].sort(key=lambda op: (op["stage"] != "running", -(op["age_s"] or 0)))
    try:
        for worker in grid.list_workers():
            result["workers"].append(
                {
                    "worker": worker.worker_name,
                    "status": BOT_STATUS.get(worker.bot_status, str(worker.bot_status)),
                    "last_seen_s": seconds_since(worker.last_updated, now),
                    "operations": [o.operation_name for o in worker.operations],
                }
            )
    except grpc.RpcError as error:
        result["errors"].append(f"ListWorkers: {error.code().name} {error.details()}")
    return result


def seconds(value: float | None) -> str:
    if value is None:
        return ""
    value = max(0, int(value))
    return f"{value // 60} min {value % 60:02d} s" if value >= 60 else f"{value} s"


def render(queue: dict) -> str:
    e = html.escape
    pools = "".join(
        f"<tr><td>Pool={e(pool)}</td><td>{c['workers']}</td><td>{c['running']}</td><td>{c['queued']}</td></tr>"
        for pool, c in queue["pools"].items()
    )
    rows = []
    for op in queue["operations"]:
        outputs = op["outputs"]
        what = e(outputs[0]) + (f" <small>(+{len(outputs) - 1})</small>" if len(outputs) > 1 else "")
        rows.append(
            f'<tr class="{e(op["stage"])}"><td>{e(op["stage"])}</td><td>Pool={e(op["pool"])}</td>'
            f"<td>{what or '?'}<br><small>{e(op['program'])} · action {e(op['action_digest'][:12])}</small></td>"
            f"<td>{seconds(op['age_s'])}</td><td>{seconds(op['running_s'])}</td><td>{e(op['worker'])}</td></tr>"
        )
    workers = "".join(
        f"<tr><td>{e(w['worker'])}</td><td>{e(w['status'])}</td><td>{seconds(w['last_seen_s'])} ago</td>"
        f"<td>{'busy' if w['operations'] else 'idle'}</td></tr>"
        for w in queue["workers"]
    )
    errors = "".join(f'<p class="error">{e(error)}</p>' for error in queue["errors"])
    empty = '<tr><td colspan="6">nothing queued or running</td></tr>'
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>rules_warp cluster queue</title>
<style>
body {{ font: 14px system-ui, sans-serif; margin: 16px; color: #222; }}
table {{ border-collapse: collapse; margin-bottom: 14px; }}
th, td {{ text-align: left; padding: 3px 10px; border-bottom: 1px solid #ddd; vertical-align: top; }}
th {{ background: #f0f0f0; }} small {{ color: #666; }}
tr.running td:first-child {{ color: #0a6; font-weight: bold; }}
tr.queued td:first-child {{ color: #b60; font-weight: bold; }}
.error {{ color: #b00; }}
</style></head><body>
<h2>Queue of instance {e(queue["instance"])} <small>{e(queue["time"])}</small></h2>
{errors}
<table><tr><th>pool</th><th>workers</th><th>running</th><th>queued</th></tr>{pools}</table>
<table><tr><th>stage</th><th>pool</th><th>action (outputs)</th><th>age</th><th>running for</th><th>worker</th></tr>
{"".join(rows) or empty}</table>
<table><tr><th>worker</th><th>status</th><th>last seen</th><th></th></tr>{workers}</table>
<small>From BuildGrid's Operations.ListOperations, Introspection.ListWorkers and CAS;
JSON: <a href="/queue.json">/queue.json</a></small>
</body></html>
"""


def serve(args: argparse.Namespace) -> None:
    grid = BuildGrid(args.state, args.server)

    def pools() -> dict[str, int]:
        # Read each time: `cluster.py up` may have changed the workers.
        with open(os.path.join(args.state, "cluster.json")) as f:
            return json.load(f)["pools"]

    class Handler(http.server.BaseHTTPRequestHandler):
        def authorized(self, query: dict) -> bool:
            token = grid.token().encode()
            given = query.get("token", [""])[0]
            bearer = self.headers.get("Authorization", "")
            if bearer.startswith("Bearer "):
                given = bearer[len("Bearer ") :]
            for part in self.headers.get("Cookie", "").split(";"):
                name, _, value = part.strip().partition("=")
                if name == COOKIE and not given:
                    given = value
            return hmac.compare_digest(given.encode(), token)

        def reply(self, code: int, body: str, kind: str, headers: dict | None = None) -> None:
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query)
            if not self.authorized(query):
                self.reply(
                    401,
                    "401: the queue page needs the cluster's queue token (STATE/secrets/queue.token): "
                    "Authorization: Bearer TOKEN, or open /?token=TOKEN once\n",
                    "text/plain; charset=utf-8",
                    {"WWW-Authenticate": "Bearer"},
                )
                return
            if "token" in query:
                # Into a cookie, and out of the address bar and the history.
                cookie = f"{COOKIE}={query['token'][0]}; Path=/; HttpOnly; Secure; SameSite=Strict"
                self.reply(303, "", "text/plain", {"Set-Cookie": cookie, "Location": url.path or "/"})
            elif url.path == "/queue.json":
                self.reply(200, json.dumps(snapshot(grid, pools()), indent=1), "application/json")
            elif url.path == "/":
                self.reply(200, render(snapshot(grid, pools())), "text/html; charset=utf-8")
            else:
                self.reply(404, "404\n", "text/plain")

        def log_message(self, format: str, *args) -> None:  # noqa: A002 (http.server's name)
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

    class Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in args.listen else socket.AF_INET
        daemon_threads = True

    server = Server((args.listen, args.port), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(
        os.path.join(args.state, "tls", "server.pem"), os.path.join(args.state, "tls", "server.key")
    )
    # The handshake in each connection's thread, not in the one that accepts.
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    print(f"queue page: https://{args.listen}:{args.port}/", file=sys.stderr, flush=True)
    server.serve_forever()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--state", required=True)
    parser.add_argument("--listen", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--server", required=True, help="BuildGrid's HOST:PORT")
    serve(parser.parse_args())
    return 0


if __name__ == "__main__":
    sys.exit(main())
