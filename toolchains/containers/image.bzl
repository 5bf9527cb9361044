"""The runner image the build platforms run in, pinned by image ID.

toolchains/containers/build_image.sh builds it offline from Debian's packages and the
hash-locked wheels and prints its ID; it says when that differs from the one here."""

RUNNER_IMAGE_ID = "sha256:a800d2cad00f42a8c10bc8c32ea357775b25f137b1baab307af22a220398ac7a"
