"""A Bots-API worker of the reference cluster: takes one lease at a time from BuildGrid and
hands its Action to buildbox-run, which stages the inputs (through this worker's
buildbox-casd), runs the command under bubblewrap in the runner image's root filesystem
and uploads the outputs. This loop only leases, adapts and reports.

    worker.py --server HOST:PORT --ca CA.pem --token TOKEN_FILE --name NAME \
        --pool default --image-id sha256:... --rootfs DIR --casd-socket PATH --casd-cache DIR \
        --buildbox-run PATH [--gpu-device /dev/nvidia0 ...] [--driver-lib HOST_PATH:NAME ...]

Two adaptations buildbox-run needs from what Bazel 4.2 sends: the Command lists its
outputs in the deprecated `output_files`/`output_directories`, which buildbox-run ignores
(it reads REAPI 2.1's `output_paths`), and `container-image` names an image by ID, which
buildbox-run would pull from a registry: the worker serves the image from a root
filesystem it holds instead, and refuses a lease for any other image. The result is
reported for the Action the server sent, so the action cache keys on what Bazel asked.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import grpc
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc
from buildgrid._protos.google.bytestream import bytestream_pb2, bytestream_pb2_grpc
from buildgrid._protos.google.devtools.remoteworkers.v1test2 import bots_pb2, bots_pb2_grpc, worker_pb2
from buildgrid._protos.google.rpc import code_pb2, status_pb2

INSTANCE = "main"
# How long one UpdateBotSession waits for work. The server answers earlier when it has a
# lease; a finished lease interrupts the wait, so this only bounds an idle poll.
POLL_SECONDS = 20
# What of the image's root filesystem an action sees. The input root is the sandbox's
# root: these directories of the image are bound read-only into it.
ROOTFS_DIRS = ("usr", "etc", "bin", "sbin", "lib", "lib64", "opt")
# Where a GPU worker binds the host driver's libraries in.
DRIVER_DIR = "/run/nvidia-driver/lib64"


def _digest(data: bytes) -> re_pb2.Digest:
    return re_pb2.Digest(hash=hashlib.sha256(data).hexdigest(), size_bytes=len(data))


class LeaseRefused(Exception):
    """A lease this worker cannot run; reported with the reason, as FAILED_PRECONDITION unless
    another code says more (NOT_FOUND: an input to upload again)."""

    def __init__(self, message: str, code: int = code_pb2.FAILED_PRECONDITION) -> None:
        super().__init__(message)
        self.code = code


def _matches(f, digest: re_pb2.Digest) -> bool:
    hasher = hashlib.sha256()
    size = 0
    while chunk := f.read(1 << 20):
        hasher.update(chunk)
        size += len(chunk)
    return size == digest.size_bytes and hasher.hexdigest() == digest.hash


class Worker:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        with open(args.ca, "rb") as f:
            credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
        with open(args.token) as f:
            self.metadata = (("authorization", "Bearer " + f.read().strip()),)
        channel = grpc.secure_channel(args.server, credentials)
        self.bots = bots_pb2_grpc.BotsStub(channel)
        self.cas = re_grpc.ContentAddressableStorageStub(channel)
        self.bytestream = bytestream_pb2_grpc.ByteStreamStub(channel)
        self.done = threading.Event()
        self.running: dict[str, tuple[threading.Thread, dict]] = {}
        self.stopping = False
        self.links = image_links(args.rootfs)
        # Blobs of casd's cache read back and found whole, and the input trees' Directory
        # messages (check_local_inputs).
        self.verified: set[str] = set()
        self.directories: dict[str, re_pb2.Directory] = {}

    def properties(self) -> list[worker_pb2.Device.Property]:
        values = {"Pool": self.args.pool, "container-image": "docker://" + self.args.image_id}
        return [worker_pb2.Device.Property(key=k, value=v) for k, v in sorted(values.items())]

    def new_session(self) -> bots_pb2.BotSession:
        session = bots_pb2.BotSession(bot_id=f"{self.args.name}-{uuid.uuid4().hex[:8]}", status=bots_pb2.OK)
        session.worker.devices.add(handle=self.args.name, properties=self.properties())
        return self.bots.CreateBotSession(
            bots_pb2.CreateBotSessionRequest(parent=INSTANCE, bot_session=session),
            metadata=self.metadata,
            # BuildGrid holds a CreateBotSession as it holds a poll (most of its deadline).
            timeout=5,
        )

    def serve(self) -> None:
        session = None
        while not self.stopping:
            try:
                if session is None:
                    session = self.new_session()
                    print(
                        f"worker {self.args.name}: session {session.name} (pool {self.args.pool})", flush=True
                    )
                self.report_finished(session)
                self.done.clear()
                call = self.bots.UpdateBotSession.future(
                    bots_pb2.UpdateBotSessionRequest(name=session.name, bot_session=session),
                    metadata=self.metadata,
                    timeout=POLL_SECONDS,
                )
                # A lease that finishes while the server holds the poll is reported at once.
                while not call.done() and not self.done.wait(0.05):
                    pass
                if not call.done():
                    call.cancel()
                    continue
                session = call.result()
                self.take_leases(session)
            except grpc.RpcError as error:
                code = error.code()
                if code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
                    continue
                # The server restarted or forgot the session: open a new one. Leases that
                # were running are reported again on it (the server ignores stale ones).
                print(f"worker {self.args.name}: {code.name}: {error.details()}; reconnecting", flush=True)
                session = None
                time.sleep(1)

    def report_finished(self, session: bots_pb2.BotSession) -> None:
        for lease in session.leases:
            entry = self.running.get(lease.id)
            if entry and not entry[0].is_alive():
                lease.state = bots_pb2.LeaseState.COMPLETED
                lease.status.CopyFrom(entry[1]["status"])
                if "result" in entry[1]:
                    lease.result.Pack(entry[1]["result"])
                del self.running[lease.id]
        # Completed leases are sent once; the server drops them from the next session.

    def take_leases(self, session: bots_pb2.BotSession) -> None:
        for lease in session.leases:
            # BuildGrid hands a lease over as ACTIVE already (the Bots API's PENDING step skipped).
            # A lease this worker reported done and now gets again is a retry (same id): the
            # server processes a report within the call, so it never echoes a finished one.
            if (
                lease.state in (bots_pb2.LeaseState.PENDING, bots_pb2.LeaseState.ACTIVE)
                and lease.id not in self.running
            ):
                lease.state = bots_pb2.LeaseState.ACTIVE
                outcome: dict = {}
                thread = threading.Thread(target=self.run_lease, args=(lease, outcome), daemon=True)
                self.running[lease.id] = (thread, outcome)
                thread.start()
            elif lease.state == bots_pb2.LeaseState.CANCELLED and lease.id in self.running:
                self.running[lease.id][1].get("process", _NoProcess()).kill()
        # Leases the server no longer lists are done with.
        listed = {lease.id for lease in session.leases}
        for lease_id in [k for k in self.running if k not in listed]:
            del self.running[lease_id]

    def run_lease(self, lease: bots_pb2.Lease, outcome: dict) -> None:
        started = time.monotonic()
        print(f"worker {self.args.name}: lease {lease.id} started", flush=True)
        try:
            action = re_pb2.Action()
            if not lease.payload.Unpack(action):
                digest = re_pb2.Digest()
                lease.payload.Unpack(digest)
                action.ParseFromString(self.read_blob(digest))
            result = self.execute(action, outcome)
            outcome["result"] = result
            outcome["status"] = status_pb2.Status(code=code_pb2.OK)
            print(
                f"worker {self.args.name}: lease {lease.id} exit {result.exit_code} "
                f"in {time.monotonic() - started:.1f} s{phases(result.execution_metadata)}",
                flush=True,
            )
        except LeaseRefused as refused:
            outcome["status"] = status_pb2.Status(code=refused.code, message=str(refused))
            print(f"worker {self.args.name}: lease {lease.id} refused: {refused}", flush=True)
        except Exception as error:  # noqa: BLE001 - reported to the server as the lease's status
            outcome["status"] = status_pb2.Status(
                code=code_pb2.INTERNAL, message=f"worker {self.args.name}: {type(error).__name__}: {error}"
            )
            print(f"worker {self.args.name}: lease {lease.id} failed: {error}", flush=True)
        finally:
            self.done.set()

    def read_blob(self, digest: re_pb2.Digest) -> bytes:
        response = self.cas.BatchReadBlobs(
            re_pb2.BatchReadBlobsRequest(instance_name=INSTANCE, digests=[digest]),
            metadata=self.metadata,
            timeout=60,
        )
        blob = response.responses[0]
        if blob.status.code != code_pb2.OK:
            raise LeaseRefused(
                f"blob {digest.hash}/{digest.size_bytes} not in the CAS: {blob.status.message}"
            )
        return blob.data

    def write_blob(self, data: bytes) -> re_pb2.Digest:
        digest = _digest(data)
        response = self.cas.BatchUpdateBlobs(
            re_pb2.BatchUpdateBlobsRequest(
                instance_name=INSTANCE,
                requests=[re_pb2.BatchUpdateBlobsRequest.Request(digest=digest, data=data)],
            ),
            metadata=self.metadata,
            timeout=60,
        )
        if response.responses[0].status.code != code_pb2.OK:
            raise RuntimeError(f"uploading the rewritten Command: {response.responses[0].status.message}")
        return digest

    def adapted(self, action: re_pb2.Action) -> re_pb2.Action:
        """The Action buildbox-run is given: outputs as output_paths, the image as binds."""
        image = ""
        for prop in action.platform.properties:
            if prop.name == "container-image":
                image = prop.value
        if image and image != "docker://" + self.args.image_id:
            raise LeaseRefused(
                f"the action wants image {image}; this worker runs docker://{self.args.image_id}. "
                "Build the image the platform names (toolchains/containers/build_image.sh) and "
                "start the cluster with it (remote/cluster.py up --image DIR)"
            )
        command = re_pb2.Command()
        command.ParseFromString(self.read_blob(action.command_digest))
        if not command.output_paths:
            command.output_paths.extend(sorted(set(command.output_files) | set(command.output_directories)))
        if self.args.driver_lib:
            # The driver's libraries are bound at DRIVER_DIR, which the image's ld.so does
            # not search (NVIDIA's runtime adds its directory to the image's ld.so.cache).
            paths = [v.value for v in command.environment_variables if v.name == "LD_LIBRARY_PATH"]
            others = [v for v in command.environment_variables if v.name != "LD_LIBRARY_PATH"]
            del command.environment_variables[:]
            command.environment_variables.extend(others)
            command.environment_variables.add(name="LD_LIBRARY_PATH", value=":".join([DRIVER_DIR, *paths]))
        run = re_pb2.Action()
        run.CopyFrom(action)
        run.command_digest.CopyFrom(self.write_blob(command.SerializeToString()))
        del run.platform.properties[:]
        if self.links:
            root = re_pb2.Directory()
            root.ParseFromString(self.read_blob(action.input_root_digest))
            taken = {n.name for n in (*root.files, *root.directories, *root.symlinks)}
            for name, target in self.links.items():
                if name not in taken:
                    root.symlinks.add(name=name, target=target)
            root.symlinks.sort(key=lambda node: node.name)  # REAPI: sorted by name
            run.input_root_digest.CopyFrom(self.write_blob(root.SerializeToString()))
        return run

    def check_local_inputs(self, root: re_pb2.Digest) -> None:
        """Checks the input files the host's casd already holds against their digests, and puts
        the server's bytes in place of any that does not match. casd 1.4.25 serves its local copy
        without reading it back, and has no option to: a blob that rotted in its cache would be
        staged as the action's input. casd keeps an index of what it holds, so a copy removed
        behind its back is an I/O error in the action; the object is replaced instead, as casd
        writes them (a new file renamed over it, 0444). The server checks what it serves
        (bgd_verified.py): where its copy is bad too, it drops it and the lease is refused as
        NOT_FOUND, naming the blob, so that Bazel uploads it again. A file is read once per
        worker process: the venvs are about a gigabyte, and a blob's bytes do not change."""
        cache = self.args.casd_cache
        started, read, size = time.monotonic(), 0, 0
        for digest in self.input_files(root):
            if digest.hash in self.verified:
                continue
            path = os.path.join(cache, "cas", "objects", digest.hash[:2], digest.hash[2:])
            try:
                with open(path, "rb") as f:
                    whole = _matches(f, digest)
            except FileNotFoundError:
                continue  # casd fetches it when it stages the inputs
            read, size = read + 1, size + digest.size_bytes
            if not whole:
                blob = f"{digest.hash}/{digest.size_bytes}"
                print(
                    f"worker {self.args.name}: casd's copy of blob {blob} does not match its digest: "
                    "fetching it again from the server",
                    flush=True,
                )
                with tempfile.NamedTemporaryFile(dir=os.path.join(cache, "cas", "tmp"), delete=False) as f:
                    try:
                        self.fetch(digest, f)
                        f.flush()
                        os.fchmod(f.fileno(), 0o444)
                        os.rename(f.name, path)
                    finally:
                        if os.path.exists(f.name):
                            os.unlink(f.name)
            self.verified.add(digest.hash)
        if read:
            print(
                f"worker {self.args.name}: checked {read} blobs of casd's cache ({size / 1e6:.1f} MB) "
                f"in {time.monotonic() - started:.1f} s",
                flush=True,
            )

    def fetch(self, digest: re_pb2.Digest, out) -> None:
        """Writes the server's copy of DIGEST to OUT, checked; LeaseRefused (NOT_FOUND) if it has none."""
        resource = f"{INSTANCE}/blobs/{digest.hash}/{digest.size_bytes}"
        hasher = hashlib.sha256()
        try:
            for response in self.bytestream.Read(
                bytestream_pb2.ReadRequest(resource_name=resource), metadata=self.metadata, timeout=600
            ):
                hasher.update(response.data)
                out.write(response.data)
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.NOT_FOUND:
                raise
            raise LeaseRefused(
                f"input blob {digest.hash}/{digest.size_bytes}: this worker's cached copy and the server's "
                "did not match the digest, and the server dropped its own: upload it again",
                code_pb2.NOT_FOUND,
            ) from error
        if hasher.hexdigest() != digest.hash:
            raise RuntimeError(f"the server sent blob {digest.hash}/{digest.size_bytes} with other bytes")

    def input_files(self, root: re_pb2.Digest) -> list[re_pb2.Digest]:
        """Every file digest of the input tree under ROOT (Directory messages kept, they are few)."""
        files, todo = [], [root]
        while todo:
            wanted = [d for d in {d.hash: d for d in todo}.values() if d.hash not in self.directories]
            for start in range(0, len(wanted), 500):
                response = self.cas.BatchReadBlobs(
                    re_pb2.BatchReadBlobsRequest(instance_name=INSTANCE, digests=wanted[start : start + 500]),
                    metadata=self.metadata,
                    timeout=60,
                )
                for blob in response.responses:
                    if blob.status.code == code_pb2.OK:
                        directory = re_pb2.Directory()
                        directory.ParseFromString(blob.data)
                        self.directories[blob.digest.hash] = directory
            next_todo = []
            for digest in todo:
                directory = self.directories.get(digest.hash)
                if directory is not None:  # a missing one is buildbox-run's to report
                    files.extend(node.digest for node in directory.files)
                    next_todo.extend(node.digest for node in directory.directories)
            todo = next_todo
        return files

    def execute(self, action: re_pb2.Action, outcome: dict) -> re_pb2.ActionResult:
        run = self.adapted(action)
        self.check_local_inputs(action.input_root_digest)
        with tempfile.TemporaryDirectory(prefix="lease-", dir=self.args.work_dir) as tmp:
            action_path = os.path.join(tmp, "action.bin")
            result_path = os.path.join(tmp, "result.bin")
            with open(action_path, "wb") as f:
                f.write(run.SerializeToString())
            argv = [
                # The runner dies with this worker (a killed worker's action must not run on);
                # setpriv sets that in the child without running Python between fork and exec.
                "setpriv",
                "--pdeathsig",
                "KILL",
                "--",
                self.args.buildbox_run,
                # casd serves the cluster's instance as its default one ("").
                f"--remote=unix:{self.args.casd_socket}",
                f"--action={action_path}",
                f"--action-result={result_path}",
                "--log-level=warning",
            ]
            for name in ROOTFS_DIRS:
                path = os.path.join(self.args.rootfs, name)
                if os.path.lexists(path) and name not in self.links:
                    argv.append(f"--ro-bind-mount={os.path.realpath(path)}:/{name}")
            for device in self.args.gpu_device:
                argv.append(f"--bind-mount={device}:{device}")
            for lib in self.args.driver_lib:
                host, name = lib.rsplit(":", 1)
                argv.append(f"--ro-bind-mount={host}:{DRIVER_DIR}/{name}")
            process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            outcome["process"] = process
            log, _ = process.communicate()
            if process.returncode != 0 or not os.path.exists(result_path):
                raise RuntimeError(
                    f"buildbox-run exited {process.returncode}: {log.decode(errors='replace')[-2000:]}"
                )
            result = re_pb2.ActionResult()
            with open(result_path, "rb") as f:
                result.ParseFromString(f.read())
            return result


def phases(metadata: re_pb2.ExecutedActionMetadata) -> str:
    """Where an action's time went, from the timestamps buildbox-run records: what a worker
    adds to an action (staging its inputs, uploading its outputs) against the command itself."""

    def seconds(start, end) -> float | None:
        if not start.seconds or not end.seconds:
            return None
        return end.ToNanoseconds() / 1e9 - start.ToNanoseconds() / 1e9

    parts = [
        (
            name,
            seconds(
                getattr(metadata, f"{field}_start_timestamp"),
                getattr(metadata, f"{field}_completed_timestamp"),
            ),
        )
        for name, field in (("inputs", "input_fetch"), ("command", "execution"), ("outputs", "output_upload"))
    ]
    shown = [f"{name} {value:.1f} s" for name, value in parts if value is not None]
    return f" ({', '.join(shown)})" if shown else ""


def image_links(rootfs: str) -> dict[str, str]:
    """The image's top-level links (Debian's merged /usr: bin -> usr/bin, lib -> usr/lib): links
    in the sandbox too, not bind mounts of their targets. A tool found through one (PATH=/bin:...)
    finds its own files by `..` from where it lies, as clang finds GCC's C++ headers from
    /bin/../lib/gcc: through a bind mount at /bin that `..` is /."""
    links = {}
    for name in ROOTFS_DIRS:
        path = os.path.join(rootfs, name)
        if os.path.islink(path) and not os.path.isabs(os.readlink(path)):
            links[name] = os.readlink(path)
    return links


class _NoProcess:
    def kill(self) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--server", required=True, help="BuildGrid's address, HOST:PORT (TLS)")
    parser.add_argument("--ca", required=True, help="the certificate that signed the server's")
    parser.add_argument("--token", required=True, help="file holding this worker's JWT")
    parser.add_argument("--name", required=True)
    parser.add_argument("--pool", required=True, help="the Pool property this worker serves")
    parser.add_argument("--image-id", required=True, help="the runner image's ID, sha256:...")
    parser.add_argument("--rootfs", required=True, help="that image's root filesystem, unpacked")
    parser.add_argument(
        "--casd-socket", required=True, help="the buildbox-casd socket of this host's workers"
    )
    parser.add_argument(
        "--casd-cache", required=True, help="that casd's cache folder (its input blobs are checked)"
    )
    parser.add_argument("--buildbox-run", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument(
        "--gpu-device", action="append", default=[], help="a device node to bind in (GPU workers)"
    )
    parser.add_argument(
        "--driver-lib", action="append", default=[], help="HOST_PATH:NAME of a driver library to bind in"
    )
    args = parser.parse_args()
    worker = Worker(args)

    def stop(signum, frame):
        worker.stopping = True
        for _thread, outcome in list(worker.running.values()):
            outcome.get("process", _NoProcess()).kill()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    worker.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
