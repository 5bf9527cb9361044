# The CPU builder image as a team builds it where a registry is reachable: every action
# that needs no GPU (Python tools, NVRTC/nvFatbin compiles, bundling, C++) runs in it.
# build_image.sh builds the same image offline from Debian's packages (mmdebstrap), which
# is what --config=docker uses here. Base pinned by digest (published for bookworm-slim).
#
#     docker build -f toolchains/containers/cpu_builder.Dockerfile -t rules-warp/cpu-builder .
FROM debian:bookworm-slim@sha256:4b50eb66f977b4062683ff434ef18ac191da862dbe966961bc11990cf5791a8d

ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8

# The man directories must exist: update-alternatives links java.1.gz into them.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends bazel-bootstrap python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*

COPY toolchains/python/requirements.lock /tmp/locks/main.lock
COPY toolchains/cuda/nvrtc_13_0/requirements.lock /tmp/locks/nvrtc_13_0.lock
RUN python3 -m venv /tmp/pip \
 && /tmp/pip/bin/pip download --require-hashes --no-deps --only-binary=:all: \
        -r /tmp/locks/main.lock -r /tmp/locks/nvrtc_13_0.lock -d /opt/wheelhouse \
 && rm -rf /tmp/locks /tmp/pip /root/.cache
COPY toolchains/containers/pip.conf /etc/pip.conf

WORKDIR /workspace
CMD ["/bin/bash"]
