"""C++ libraries from Debian's package pool, pinned by file name and sha256.

Downloaded, not installed: a repository holds the package's files extracted by dpkg-deb, so
every host, whatever its release, builds with the same bytes (nlohmann-json3-dev would be
3.11.2 on Debian 12 and 3.11.3 on 13, and a parser's version must not decide a verdict).

On a machine without Debian's mirror (a GPU runner), the .deb is taken from
--repo_env=WRP_WHEELHOUSE=/abs/dir when it is there (tools/fill_wheelhouse.sh puts it
there), or from Bazel's --distdir; the sha256 is checked either way.
"""

load("//toolchains:repository_exec.bzl", "execute_or_fail")

# Each: the repository name, the package file in Debian's pool, its directory there, its
# sha256 (`apt-get download --print-uris PACKAGE` prints it) and the BUILD file laid over it.
DEBIAN_PACKAGES = {
    "wrp_nlohmann_json": struct(
        file = "nlohmann-json3-dev_3.11.2-2_all.deb",
        pool = "main/n/nlohmann-json3",
        sha256 = "ec57940def6b6186c30be0e0ee81d1e58f86d11a54a145b28686a1e3e4aae801",
        build_file = "//third_party/debian:nlohmann_json.BUILD",
    ),
    # JSON Schema (draft 7) validation over nlohmann/json: the runtime's check of wrpkg/schemas.
    "wrp_valijson": struct(
        file = "libvalijson-dev_1.0+repack-2_all.deb",
        pool = "main/v/valijson",
        sha256 = "36974bd3ff53c05c2c686ecfa094ee437ff3f520e9ab67e552f1a56f19897643",
        build_file = "//third_party/debian:valijson.BUILD",
    ),
    # GoogleTest and gMock 1.12.1 as sources (the googletest package ships /usr/src/googletest),
    # built by our BUILD file with the toolchain of each target: the runtime's unit tests, on
    # x86_64 and cross-built for aarch64 alike.
    "wrp_googletest": struct(
        file = "googletest_1.12.1-0.2_all.deb",
        pool = "main/g/googletest",
        sha256 = "927be72067517da503b6538026d451455c9e860f5dbfe237f792543db7d5a928",
        build_file = "//third_party/debian:googletest.BUILD",
    ),
    # OpenSSL's libcrypto (libssl-dev's static libcrypto.a and headers), one build of one version
    # for each target CPU: the runtime's SHA-256 (runtime/internal/sha256.cc, EVP). Linked statically, so
    # deploy binaries need no libcrypto.so.3 on the target; the aarch64 build asks glibc for
    # nothing newer than GLIBC_2.34 (tests/aarch64:abi_floor_test). Debian drops a point
    # release's build from the pool some time after the next: then move both pins to the
    # current bookworm build together (the wheelhouse keeps serving the old one offline).
    "wrp_openssl_amd64": struct(
        file = "libssl-dev_3.0.20-1~deb12u2_amd64.deb",
        pool = "main/o/openssl",
        sha256 = "43ef5c109056b1507a0972631ee8292e727029aeda1516b4672cb041730ae3af",
        build_file = "//third_party/debian:openssl.BUILD",
    ),
    "wrp_openssl_arm64": struct(
        file = "libssl-dev_3.0.20-1~deb12u2_arm64.deb",
        pool = "main/o/openssl",
        sha256 = "c6941a83bebd83d2a1cd2db56418062d8f48b3200786aacafa194b75a93a3702",
        build_file = "//third_party/debian:openssl.BUILD",
    ),
}

_MIRRORS = ["https://deb.debian.org/debian/pool", "http://deb.debian.org/debian/pool"]

def _wrp_debian_package_impl(rctx):
    wheelhouse = rctx.os.environ.get("WRP_WHEELHOUSE", "")
    urls = ["file://{}/{}".format(wheelhouse, rctx.attr.file)] if wheelhouse else []
    urls += ["{}/{}/{}".format(mirror, rctx.attr.pool, rctx.attr.file) for mirror in _MIRRORS]
    rctx.download(urls, output = rctx.attr.file, sha256 = rctx.attr.sha256)
    dpkg_deb = rctx.which("dpkg-deb")
    if not dpkg_deb:
        fail("wrp_debian_package {}: no dpkg-deb on PATH (a Debian host has it; package dpkg)".format(rctx.name))
    execute_or_fail(rctx, [dpkg_deb, "--extract", rctx.attr.file, "."], "extracting " + rctx.attr.file)
    rctx.delete(rctx.attr.file)
    rctx.symlink(rctx.attr.build_file, "BUILD.bazel")
    rctx.file("WORKSPACE", "workspace(name = \"{}\")\n".format(rctx.name))

wrp_debian_package = repository_rule(
    implementation = _wrp_debian_package_impl,
    attrs = {
        "build_file": attr.label(mandatory = True, allow_single_file = True),
        "file": attr.string(mandatory = True, doc = "The .deb's file name in the pool."),
        "pool": attr.string(mandatory = True, doc = "Its directory under pool/, e.g. main/n/nlohmann-json3."),
        "sha256": attr.string(mandatory = True),
    },
    environ = ["PATH", "WRP_WHEELHOUSE"],
    doc = "A Debian package's files, from a pinned .deb of Debian's pool.",
)

def wrp_debian_packages():
    """Declares every repository of DEBIAN_PACKAGES the WORKSPACE does not have already."""
    existing = native.existing_rules()
    for name, package in DEBIAN_PACKAGES.items():
        if name not in existing:
            wrp_debian_package(
                name = name,
                build_file = Label(package.build_file),
                file = package.file,
                pool = package.pool,
                sha256 = package.sha256,
            )
