"""@wrp_runner_image: the runner image the build platforms name, by image ID.

The ID recorded in image.bzl, unless --repo_env=WRP_RUNNER_IMAGE_ID=sha256:... names
another: the image a team built (toolchains/containers/build_image.sh prints its ID) or
the one a remote cluster's workers run (remote/cluster.py writes that flag). The image
is in every action's platform, so it is part of every remote action's key."""

load("//toolchains/containers:image.bzl", "RUNNER_IMAGE_ID")

_HEX = "0123456789abcdef"

def _valid_image_id(image_id):
    if not image_id.startswith("sha256:") or len(image_id) != len("sha256:") + 64:
        return False
    for c in image_id[len("sha256:"):].elems():
        if c not in _HEX:
            return False
    return True

def _wrp_runner_image_impl(rctx):
    image_id = rctx.os.environ.get("WRP_RUNNER_IMAGE_ID", "") or rctx.attr.recorded
    if not _valid_image_id(image_id):
        fail("WRP_RUNNER_IMAGE_ID={} is not an image ID (sha256: and 64 hex digits); ".format(image_id) +
             "toolchains/containers/build_image.sh prints the ID of the image it builds")
    rctx.file("BUILD.bazel", "exports_files([\"image.bzl\"])\n")
    rctx.file("image.bzl", "\"\"\"The runner image, by ID (@rules_warp//toolchains/containers:repositories.bzl).\"\"\"\n\n" +
                           "RUNNER_IMAGE_ID = \"{}\"\n".format(image_id))

wrp_runner_image = repository_rule(
    implementation = _wrp_runner_image_impl,
    attrs = {"recorded": attr.string(default = RUNNER_IMAGE_ID)},
    environ = ["WRP_RUNNER_IMAGE_ID"],
    local = True,
)
