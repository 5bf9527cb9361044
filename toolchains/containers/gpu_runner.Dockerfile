# The GPU runner image as a team builds it where a registry is reachable: a CUDA GPU
# machine's executor (the `gpu` pool) runs the CUDA capture action and gpu-tagged tests
# in it. No CUDA toolkit is used: NVRTC and nvFatbin come from the pinned wheels, and the
# driver (libcuda) is mounted from the host by NVIDIA's container runtime. The base is
# pinned by digest: a tag can move, a digest cannot. Update both lines together.
#
#     docker build -f toolchains/containers/gpu_runner.Dockerfile -t rules-warp/gpu-runner .
#     docker run --runtime=nvidia --gpus all rules-warp/gpu-runner nvidia-smi
#
# NVIDIA container runtime environment (read by nvidia-container-toolkit at start):
#   NVIDIA_VISIBLE_DEVICES=all              which GPUs are mounted in; an executor that gives
#                                           each action its own GPU overrides it (index/UUID)
#   NVIDIA_DRIVER_CAPABILITIES=compute,utility  libcuda + nvidia-smi; no graphics/video
# The executor selects the runtime with the exec property dockerRuntime=nvidia, which
# rules/private/pools.bzl sets on GPU work.

# nvidia/cuda:13.0.3-base-ubuntu24.04: the CUDA 13.0 runtime base (the H200 runners'
# driver is CUDA 13.0), no toolkit. The digest is the one published for that tag.
FROM nvidia/cuda:13.0.3-base-ubuntu24.04@sha256:7c7413a56200486f71f181cad9310f6fd31b6bb21816ade15fc9c1e1e927a5c1

ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    DEBIAN_FRONTEND=noninteractive \
    LANG=C.UTF-8

# Bazel 4.2.3 from Ubuntu's universe (Debian's bazel-bootstrap, as on the CPU builders),
# the C++ toolchain and Python.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bazel-bootstrap g++ python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*

# Every hash-locked wheel in a wheelhouse: the build's venvs install from it with no
# registry (pip.conf), each wheel still checked against its hash by pip.
COPY toolchains/python/requirements.lock /tmp/locks/main.lock
COPY toolchains/cuda/nvrtc_13_0/requirements.lock /tmp/locks/nvrtc_13_0.lock
RUN python3 -m venv /tmp/pip \
 && /tmp/pip/bin/pip download --require-hashes --no-deps --only-binary=:all: \
        -r /tmp/locks/main.lock -r /tmp/locks/nvrtc_13_0.lock -d /opt/wheelhouse \
 && rm -rf /tmp/locks /tmp/pip /root/.cache
COPY toolchains/containers/pip.conf /etc/pip.conf

WORKDIR /workspace
CMD ["/bin/bash"]
