"""@wrp_runner_image: the runner image the build platforms name, pinned by digest.

The ID recorded in image.bzl, unless --repo_env=WRP_RUNNER_IMAGE_ID names another: an
image ID (sha256:...) as toolchains/containers/build_image.sh prints it and
remote/cluster.py's workers serve it, or a registry reference pinned by digest
(registry.example/rules-warp/runner@sha256:...) for executors that pull images. The image
is in every action's platform (`container-image=docker://...`), so it is part of every
remote action's key."""

load("//toolchains/containers:image.bzl", "RUNNER_IMAGE_ID")

_HEX = "0123456789abcdef"

def _valid_image_id(image_id):
    """sha256:<64 hex>, alone or after `<repository>@`: an image named by its digest."""
    digest = image_id.rpartition("@")[2] if "@" in image_id else image_id
    if not digest.startswith("sha256:") or len(digest) != len("sha256:") + 64:
        return False
    if "@" in image_id and not image_id.rpartition("@")[0]:
        return False
    for c in digest[len("sha256:"):].elems():
        if c not in _HEX:
            return False
    return True

def _wrp_runner_image_impl(rctx):
    image_id = rctx.os.environ.get("WRP_RUNNER_IMAGE_ID", "") or rctx.attr.recorded
    if not _valid_image_id(image_id):
        fail("WRP_RUNNER_IMAGE_ID={} is not an image pinned by digest (sha256: and 64 hex digits, ".format(image_id) +
             "or REPOSITORY@sha256:...); toolchains/containers/build_image.sh prints the ID of the image it builds")
    rctx.file("BUILD.bazel", "exports_files([\"image.bzl\"])\n")
    rctx.file("image.bzl", "\"\"\"The runner image, by ID (@rules_warp//toolchains/containers:repositories.bzl).\"\"\"\n\n" +
                           "RUNNER_IMAGE_ID = \"{}\"\n".format(image_id))

wrp_runner_image = repository_rule(
    implementation = _wrp_runner_image_impl,
    attrs = {"recorded": attr.string(default = RUNNER_IMAGE_ID)},
    environ = ["WRP_RUNNER_IMAGE_ID"],
    local = True,
)
