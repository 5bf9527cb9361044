#!/usr/bin/env python3
"""The reference remote-execution cluster, on one machine: BuildGrid (REAPI server: CAS,
action cache, execution, Bots API) over PostgreSQL and Redis, and workers that run each
action with buildbox-run in the runner image's root filesystem. remote/README.md says what
each part is and how it scales.

    remote/cluster.py up [--cpu-workers N] [--gpu-workers auto|N] [--image DIR] [--listen ADDR]
                         [--image-root DIR --image-id sha256:...] [--no-fuse]
    remote/cluster.py down [--purge]
    remote/cluster.py status

`up` is idempotent: it starts what is not running (after a crash or a `kill`, the same
state, ports and tokens). It writes STATE/bazelrc, which points `--config=remote` at the
cluster:

    bazel --bazelrc=STATE/bazelrc build --config=remote //models:sim_wrp

Everything lives under --state (default /var/tmp/rules_warp-remote/cluster): TLS keys,
tokens, the database, Redis's append-only file, the CAS, logs. Downloads and the unpacked
image are kept under --cache, keyed by their hashes. The server listens on loopback unless
--listen says otherwise, always with TLS, and every request needs a token.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from cluster_setup import (
    DEFAULT_ROOT,
    HERE,
    INSTANCE,
    ClusterError,
    State,
    buildbox,
    free_port,
    fuse_staging,
    log,
    make_tls,
    make_token,
    run,
    runner_image,
    server_venv,
)

# What the workers' casd and the workers create is theirs alone (up() says why).
WORKER_UMASK = 0o077

# --- Processes ----------------------------------------------------------------------------


def pid_of(state: State, name: str) -> int | None:
    path = state.path("run", f"{name}.pid")
    try:
        pid = int(open(path).read())
        # A zombie (where nothing reaps the detached processes) is dead too.
        with open(f"/proc/{pid}/stat") as f:
            return None if f.read().rsplit(")", 1)[1].split()[0] == "Z" else pid
    except (OSError, ValueError, IndexError):
        return None


def start(state: State, name: str, argv: list[str], env: dict | None = None, umask: int = -1) -> None:
    if pid_of(state, name):
        return
    with open(state.path("logs", f"{name}.log"), "ab") as out:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
            umask=umask,
        )
    with open(state.path("run", f"{name}.pid"), "w") as f:
        f.write(str(process.pid))


def stop(state: State, name: str, grace: float = 10.0) -> None:
    pid = pid_of(state, name)
    if pid:
        try:
            os.killpg(pid, signal.SIGTERM)
        except OSError:
            pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and pid_of(state, name):
            time.sleep(0.1)
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.unlink(state.path("run", f"{name}.pid"))
    except FileNotFoundError:
        pass


def wait_port(port: int, what: str, state: State, log_name: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    tail = open(state.path("logs", f"{log_name}.log"), errors="replace").read()[-3000:]
    raise ClusterError(f"{what} did not listen on port {port} within {seconds:.0f} s; its log:\n{tail}")


# --- Services -------------------------------------------------------------------------------


def postgres_bin() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise ClusterError(
            "PostgreSQL is not installed: run tools/setup.sh --remote (apt-get install postgresql)"
        )
    return os.path.dirname(found[-1])


def as_postgres_user(argv: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root; Debian's package made the `postgres` user.
    if os.getuid() != 0:
        return argv
    # Bazel's strict action env leaves /usr/sbin off PATH.
    runuser = (
        shutil.which("runuser", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") or "/usr/sbin/runuser"
    )
    return [runuser, "-u", "postgres", "--", *argv]


def start_postgres(state: State, port: int) -> str:
    data = state.path("pg")
    password = state.secret("pg.password")
    bindir = postgres_bin()
    if (
        os.getuid() == 0
        and subprocess.run(as_postgres_user(["test", "-x", state.root]), cwd="/").returncode != 0
    ):
        raise ClusterError(
            f"PostgreSQL runs as the user postgres, which cannot enter {state.root} (a directory under "
            "/root?): give --state a directory it can reach, e.g. under /var/tmp"
        )
    if not os.path.exists(os.path.join(data, "PG_VERSION")):
        os.makedirs(data, exist_ok=True)
        pwfile = state.path("run", "pg.pw")
        with open(pwfile, "w") as f:
            f.write(password)
        if os.getuid() == 0:
            shutil.chown(data, "postgres", "postgres")
            shutil.chown(pwfile, "postgres", "postgres")
        run(
            as_postgres_user(
                [
                    f"{bindir}/initdb",
                    "-D",
                    data,
                    "-U",
                    "bgd",
                    "--auth=scram-sha-256",
                    f"--pwfile={pwfile}",
                    "-E",
                    "UTF8",
                    "--locale=C",
                ]
            ),
            "initdb",
            cwd=state.root,
        )
        os.unlink(pwfile)
    sockets = state.path("run", "pg")
    os.makedirs(sockets, exist_ok=True)
    if os.getuid() == 0:
        shutil.chown(sockets, "postgres", "postgres")
        shutil.chown(state.path("logs"), "postgres", "postgres")
    status = subprocess.run(
        as_postgres_user([f"{bindir}/pg_ctl", "-D", data, "status"]), capture_output=True, cwd=state.root
    )
    if status.returncode != 0:
        run(
            as_postgres_user(
                [
                    f"{bindir}/pg_ctl",
                    "-D",
                    data,
                    "-w",
                    "-l",
                    state.path("logs", "postgres.log"),
                    "-o",
                    f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1",
                    "start",
                ]
            ),
            "starting PostgreSQL",
            cwd=state.root,
        )
    env = {**os.environ, "PGPASSWORD": password}
    exists = run(
        [
            f"{bindir}/psql",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-U",
            "bgd",
            "-d",
            "postgres",
            "-tAc",
            "SELECT 1 FROM pg_database WHERE datname = 'bgd'",
        ],
        "psql",
        env=env,
    ).stdout.strip()
    if exists != "1":
        run(
            [f"{bindir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "bgd", "bgd"],
            "createdb",
            env=env,
        )
    return f"postgresql+psycopg2://bgd:{password}@127.0.0.1:{port}/bgd"


def stop_postgres(state: State) -> None:
    if os.path.exists(state.path("pg", "postmaster.pid")):
        subprocess.run(
            as_postgres_user([f"{postgres_bin()}/pg_ctl", "-D", state.path("pg"), "-m", "fast", "stop"]),
            capture_output=True,
            cwd=state.root,
        )


def start_redis(state: State, port: int) -> None:
    redis = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not os.path.exists(redis):
        raise ClusterError(
            "redis-server is not installed: run tools/setup.sh --remote (apt-get install redis-server)"
        )
    conf = state.path("redis", "redis.conf")
    with open(os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        # Every write to the append-only file before it is acknowledged: an action cache
        # entry Bazel was told about survives a crash of the server or of Redis.
        f.write(
            f"bind 127.0.0.1\nport {port}\ndir {state.path('redis')}\nappendonly yes\nappendfsync always\n"
            f'save ""\nrequirepass {state.secret("redis.password")}\ndaemonize no\n'
        )
    start(state, "redis", [redis, conf])
    wait_port(port, "Redis", state, "redis")


def property_labels(pools: dict[str, int], image_id: str) -> str:
    lines = []
    for pool in sorted(p for p, n in pools.items() if n > 0):
        lines.append(
            f"        - label: {pool}\n          properties: [[Pool, {pool}], "
            f'[container-image, "docker://{image_id}"]]'
        )
    return "\n".join(lines)


def write_server_config(state: State, config: dict, image_id: str) -> str:
    template = open(os.path.join(HERE, "bgd.yml.in")).read()
    values = {
        "LISTEN": config["listen"],
        "PORT": str(config["port"]),
        "STATE": state.root,
        "PG_PASSWORD": state.secret("pg.password"),
        "PG_PORT": str(config["pg_port"]),
        "REDIS_PORT": str(config["redis_port"]),
        "PROPERTY_LABELS": property_labels(config["pools"], image_id),
        "KEEPALIVE": str(config["keepalive"]),
        "QUEUE_TIMEOUT": str(config["queue_timeout"]),
        "QUEUE_TIMEOUT_PERIOD": str(max(5, config["queue_timeout"] // 4)),
        "ACL": os.path.join(HERE, "bgd-acl.yml"),
    }
    for key, value in values.items():
        template = template.replace(f"@{key}@", value)
    path = state.path("bgd.yml")
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(template)
    return path


# What NVIDIA's container toolkit mounts for the compute and utility capabilities
# (tools/gpu/enter_runner.sh binds the same into the runner root).
DRIVER_SONAMES = (
    "libcuda.so.1",
    "libcudadebugger.so.1",
    "libnvidia-ptxjitcompiler.so.1",
    "libnvidia-nvvm.so.4",
    "libnvidia-gpucomp.so",
    "libnvidia-ml.so.1",
    "libnvidia-cfg.so.1",
)


def driver_libraries() -> list[str]:
    """HOST_PATH:NAME of the host driver's libraries, as a GPU worker binds them in."""
    ldconfig = shutil.which("ldconfig", path="/usr/sbin:/sbin:/usr/bin") or "/sbin/ldconfig"
    listing = subprocess.run([ldconfig, "-p"], capture_output=True, text=True).stdout
    found = {}
    for line in listing.splitlines():
        # "	libcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1"
        name, _, path = line.strip().partition(" => ")
        soname = name.split(" ")[0]
        if "x86-64" in name and any(soname.startswith(s) for s in DRIVER_SONAMES) and soname not in found:
            found[soname] = os.path.realpath(path)
    return [f"{path}:{soname}" for soname, path in sorted(found.items())]


def gpu_devices() -> list[str]:
    return sorted(p for p in glob.glob("/dev/nvidia[0-9]*") if p[len("/dev/nvidia") :].isdigit())


def start_client_proxy(state: State, config: dict, server: str) -> int:
    """nginx carrying this machine's Bazel calls to the server over TLS (client-proxy.nginx.conf.in says why)."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx):
        raise ClusterError("nginx is not installed: run tools/setup.sh (apt-get install nginx)")
    home = state.path("client")
    os.makedirs(os.path.join(home, "tmp"), exist_ok=True)
    host = server.rsplit(":", 1)[0]
    # nginx checks the certificate's DNS names only, not its IP addresses.
    host = "localhost" if host in ("127.0.0.1", "::1") else host
    values = {
        "DIR": home,
        "PORT": str(config["proxy_port"]),
        "SERVER": server,
        "CA": state.path("tls", "ca.pem"),
        "SERVER_NAME": host,
        "USER": "user root;" if os.getuid() == 0 else "",
    }
    conf = open(os.path.join(HERE, "client-proxy.nginx.conf.in")).read()
    for key, value in values.items():
        conf = conf.replace(f"@{key}@", value)
    with open(os.path.join(home, "nginx.conf"), "w") as f:
        f.write(conf)
    start(state, "client-proxy", [nginx, "-c", os.path.join(home, "nginx.conf"), "-p", home])
    wait_port(config["proxy_port"], "the client proxy (nginx)", state, "client-proxy")
    return config["proxy_port"]


def write_bazelrc(state: State, config: dict, image_id: str, proxy_port: int) -> str:
    token = open(state.path("secrets", "bazel.token")).read().strip()
    lines = [
        "# Written by remote/cluster.py up: `bazel --bazelrc=THIS build --config=remote ...`",
        # Plaintext to the local proxy, TLS from there (client-proxy.nginx.conf.in). A Bazel
        # with TLS support can instead use --remote_executor=grpcs://HOST:PORT and
        # --tls_certificate=<state>/tls/ca.pem.
        f"build:remote --remote_executor=grpc://127.0.0.1:{proxy_port}",
        f"build:remote --remote_instance_name={INSTANCE}",
        f'build:remote "--remote_header=authorization=Bearer {token}"',
        # BuildGrid answers RESOURCE_EXHAUSTED past thread-pool-size calls at once (bgd.yml.in),
        # and a cold build on many cores starts thousands of uploads at once (every action's
        # venv files): Bazel's 5 retries span 3 s, less than such a burst lasts. Fewer
        # connections (about 100 calls each) and more retries (backoff capped at 5 s) ride it out.
        "build:remote --remote_max_connections=4",
        "build:remote --remote_retries=10",
        # Only workers write the action cache (bgd-acl.yml): the client token may not call
        # UpdateActionResult, so Bazel must not try with what it ran itself (tests tagged local).
        "build:remote --remote_upload_local_results=false",
        # The image the workers run: named in every action's platform, so part of its key.
        f"build:remote --repo_env=WRP_RUNNER_IMAGE_ID={image_id}",
    ]
    path = state.path("bazelrc")
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def start_queue_page(state: State, config: dict, python: str, server: str, wanted: bool) -> None:
    """queue_page.py: the queued and running actions, from BuildGrid's API (README: Queue page)."""
    if not wanted:
        stop(state, "queue-page")
        return
    start(
        state,
        "queue-page",
        [
            python,
            os.path.join(HERE, "queue_page.py"),
            f"--state={state.root}",
            f"--listen={config['listen']}",
            f"--port={config['queue_port']}",
            f"--server={server}",
        ],
        env={"PYTHONUNBUFFERED": "1"},
    )
    wait_port(config["queue_port"], "the queue page", state, "queue-page")
    host = "localhost" if config["listen"] in ("127.0.0.1", "0.0.0.0", "::") else config["listen"]
    log(f"queue page: https://{host}:{config['queue_port']}/ (token: {state.path('secrets', 'queue.token')})")


def up(args: argparse.Namespace) -> None:
    os.makedirs(args.cache, exist_ok=True)
    state = State(args.state)
    python = server_venv(args.cache)
    if os.path.abspath(sys.prefix) != os.path.dirname(os.path.dirname(python)):
        # The TLS and token code needs the venv's cryptography and PyJWT.
        os.execve(python, [python, os.path.abspath(__file__), *sys.argv[1:]], os.environ)
    tools = buildbox(args.cache)
    if args.image_root:
        # An image already unpacked: the GPU runner's own root inside tools/gpu/enter_runner.sh
        # (the GPU machine has no Docker and no space to unpack the image twice).
        if not (args.image_id or "").startswith("sha256:"):
            raise ClusterError("--image-root needs --image-id sha256:... (the ID the platforms will name)")
        if not os.path.isdir(os.path.join(args.image_root, "usr")):
            raise ClusterError(f"--image-root {args.image_root} holds no usr/: not a root filesystem")
        image_id, rootfs = args.image_id, args.image_root
    else:
        image_id, rootfs = runner_image(args.image, args.cache)

    config = state.config()
    gpus = gpu_devices()
    gpu_workers = len(gpus) if args.gpu_workers == "auto" else int(args.gpu_workers)
    if gpu_workers > len(gpus):
        raise ClusterError(
            f"--gpu-workers {gpu_workers}, but this machine has {len(gpus)} GPU device node(s)"
        )
    config.setdefault("listen", args.listen)
    config.setdefault("port", args.port or free_port(config["listen"] if config["listen"] != "::" else "::"))
    config.setdefault("pg_port", free_port("127.0.0.1"))
    config.setdefault("redis_port", free_port("127.0.0.1"))
    config.setdefault("proxy_port", free_port("127.0.0.1"))
    config.setdefault("queue_port", free_port(config["listen"] if config["listen"] != "::" else "::"))
    config.update(
        pools={"default": args.cpu_workers, "gpu": gpu_workers},
        keepalive=args.keepalive,
        queue_timeout=args.queue_timeout,
        image_id=image_id,
    )
    state.save_config(config)

    hosts = ["127.0.0.1", "localhost"] + (
        [config["listen"]] if config["listen"] not in ("127.0.0.1",) else []
    )
    make_tls(state, hosts)
    make_token(state, "bazel", args.token_days)
    worker_token = make_token(state, "worker", args.token_days)
    make_token(state, "queue", args.token_days)

    connection = start_postgres(state, config["pg_port"])
    start_redis(state, config["redis_port"])
    run([os.path.join(os.path.dirname(python), "bgd"), "migrate", "apply", connection], "bgd migrate apply")
    bgd_config = write_server_config(state, config, image_id)
    # bgd_verified.py is `bgd` whose disk storage checks each blob it serves against its digest.
    start(state, "bgd", [python, os.path.join(HERE, "bgd_verified.py"), "server", "start", bgd_config])
    wait_port(config["port"], "BuildGrid", state, "bgd")

    server = (
        f"127.0.0.1:{config['port']}"
        if config["listen"] in ("0.0.0.0", "::")
        else f"{config['listen']}:{config['port']}"
    )
    fuse, why_not = fuse_staging(tools) if args.fuse else (False, "--no-fuse")
    log("inputs staged through buildbox-fuse" if fuse else f"inputs staged as hard links ({why_not})")
    # casd stages through buildbox-fuse when it finds it on its PATH (the workers need nothing).
    casd_env = {"PATH": f"{tools}:{os.environ.get('PATH', '/usr/bin:/bin')}"} if fuse else None
    # One casd for the host's workers, as buildbox deployments run it: a casd per worker fetched
    # the venvs' 20,000 blobs once per worker (23-27 s each on the H200 machine). Workers that
    # start together still all wait for the one fetch (remote/README.md, "On the GPU machine").
    socket_path = state.path("workers", "casd.sock")
    # The workers' casd cache and lease folders hold the inputs of every action (sources
    # included) and its outputs: for the workers' user alone. casd makes its objects 0444 on
    # purpose (a hard-linked input must not be writable), so the folders above them are 0700,
    # and casd and the workers create everything else under a umask of 077.
    os.makedirs(state.path("workers"), exist_ok=True)
    os.chmod(state.path("workers"), 0o700)
    if not pid_of(state, "casd-host"):
        if os.path.exists(socket_path):
            os.unlink(socket_path)
        start(
            state,
            "casd-host",
            [
                os.path.join(tools, "buildbox-casd"),
                f"--cas-remote=https://{server}",
                f"--cas-instance={INSTANCE}",
                f"--cas-server-cert={state.path('tls', 'ca.pem')}",
                f"--cas-access-token={worker_token}",
                f"--bind=unix:{socket_path}",
                "--log-level=warning",
                state.path("workers", "casd"),
            ],
            env=casd_env,
            umask=WORKER_UMASK,
        )
    deadline = time.monotonic() + 30
    while not os.path.exists(socket_path):
        if time.monotonic() > deadline:
            raise ClusterError(
                f"buildbox-casd did not open {socket_path}; see {state.path('logs', 'casd-host.log')}"
            )
        time.sleep(0.1)
    workers = [(f"cpu{i}", "default", []) for i in range(args.cpu_workers)]
    workers += [(f"gpu{i}", "gpu", [gpus[i]]) for i in range(gpu_workers)]
    for name, pool, devices in workers:
        home = state.path("workers", name)
        os.makedirs(os.path.join(home, "tmp"), mode=0o700, exist_ok=True)
        os.chmod(home, 0o700)
        gpu_nodes, driver = [], []
        if devices:
            driver = driver_libraries()
            if not any(lib.endswith(":libcuda.so.1") for lib in driver):
                raise ClusterError(
                    "a GPU worker needs the driver's libcuda.so.1, which ldconfig -p does not list"
                )
            gpu_nodes = devices + [
                p for p in ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools") if os.path.exists(p)
            ]
        start(
            state,
            f"worker-{name}",
            [
                python,
                os.path.join(HERE, "worker.py"),
                f"--server={server}",
                f"--ca={state.path('tls', 'ca.pem')}",
                f"--token={worker_token}",
                f"--name={name}",
                f"--pool={pool}",
                f"--image-id={image_id}",
                f"--rootfs={rootfs}",
                f"--casd-socket={socket_path}",
                f"--casd-cache={state.path('workers', 'casd')}",
                f"--buildbox-run={os.path.join(tools, 'buildbox-run')}",
                f"--work-dir={os.path.join(home, 'tmp')}",
                *[f"--gpu-device={node}" for node in gpu_nodes],
                *[f"--driver-lib={lib}" for lib in driver],
            ],
            env={"PYTHONUNBUFFERED": "1"},
            umask=WORKER_UMASK,
        )
    rc = write_bazelrc(state, config, image_id, start_client_proxy(state, config, server))
    start_queue_page(state, config, python, server, args.queue_page)
    log(f"up: grpcs://{server} ({args.cpu_workers} CPU and {gpu_workers} GPU workers, image {image_id[:19]})")
    print(rc)


def down(args: argparse.Namespace) -> None:
    state = State(args.state)
    for pidfile in sorted(glob.glob(state.path("run", "worker-*.pid"))):
        stop(state, os.path.basename(pidfile)[:-4])
    stop(state, "client-proxy")
    stop(state, "queue-page")
    stop(state, "bgd")
    for pidfile in sorted(glob.glob(state.path("run", "casd-*.pid"))):
        stop(state, os.path.basename(pidfile)[:-4])
    stop(state, "redis")
    stop_postgres(state)
    if args.purge:
        shutil.rmtree(state.root, ignore_errors=True)
    log("down" + (f", {state.root} removed" if args.purge else ""))


def status(args: argparse.Namespace) -> None:
    state = State(args.state)
    config = state.config()
    names = sorted(os.path.basename(p)[:-4] for p in glob.glob(state.path("run", "*.pid")))
    report = {name: ("running" if pid_of(state, name) else "dead") for name in names}
    print(json.dumps({"config": config, "processes": report}, indent=1, sort_keys=True))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--state", default=os.path.join(DEFAULT_ROOT, "cluster"), help="the cluster's state")
    parser.add_argument("--cache", default=os.path.join(DEFAULT_ROOT, "cache"), help="downloads and images")
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up")
    p_up.add_argument("--cpu-workers", type=int, default=2)
    p_up.add_argument("--gpu-workers", default="auto", help="'auto': one per /dev/nvidiaN")
    p_up.add_argument(
        "--image", default="/var/tmp/rules_warp-image", help="build_image.sh's output directory"
    )
    p_up.add_argument(
        "--image-root",
        help="an unpacked root filesystem to run actions in instead of --image (e.g. / inside the GPU runner)",
    )
    p_up.add_argument("--image-id", help="with --image-root: the image ID (sha256:...) the platforms name")
    p_up.add_argument("--listen", default="127.0.0.1", help="the address to serve on (default loopback only)")
    p_up.add_argument("--port", type=int, default=0, help="default: a free port, kept across restarts")
    p_up.add_argument(
        "--keepalive", type=int, default=60, help="seconds before a silent worker's lease is requeued"
    )
    p_up.add_argument("--queue-timeout", type=int, default=600, help="seconds a job may wait for a worker")
    p_up.add_argument("--token-days", type=int, default=30)
    p_up.add_argument(
        "--no-queue-page",
        dest="queue_page",
        action="store_false",
        help="do not serve the queue page (queue_page.py; it follows --listen, TLS and a token)",
    )
    p_up.add_argument(
        "--no-fuse",
        dest="fuse",
        action="store_false",
        help="stage inputs as hard links even where buildbox-fuse could (to compare, or where FUSE misbehaves)",
    )
    p_down = sub.add_parser("down")
    p_down.add_argument(
        "--purge", action="store_true", help="also delete the state (CAS, action cache, keys)"
    )
    sub.add_parser("status")
    args = parser.parse_args()
    try:
        {"up": up, "down": down, "status": status}[args.command](args)
    except ClusterError as error:
        print(f"cluster.py {args.command}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
