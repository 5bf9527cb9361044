"""Executor pools: which machines run an action, as exec properties a remote executor sees.

The build platforms (//platforms) give every action the runner image and `Pool=default`.
GPU work overrides `Pool` through an exec group, so only the spawn that needs the GPU
goes to a GPU runner: the CUDA capture action (exec group `capture` of wrp_artifact) and
the test spawn of every gpu-tagged test (exec group `test`), never their compiles, links
or bundling. Execution requirements (`execution_requirements = {"gpu": ...}`) would not
do: Bazel does not send them to a remote executor."""

# `dockerRuntime` is what executors that start `container-image` per action read to run
# the container with NVIDIA's runtime (BuildBuddy does; so does the RBE setup openxla/xla
# uses for its GPU tests), which mounts the host's driver and the GPUs into it.
GPU_POOL = {
    "Pool": "gpu",
    "dockerRuntime": "nvidia",
}

# The exec group of wrp_artifact's capture action.
CAPTURE_EXEC_GROUP = "capture"

def gpu_exec_properties(exec_group):
    """Target exec_properties that route `exec_group`'s spawns of the target to the GPU pool."""
    return {"{}.{}".format(exec_group, key): value for key, value in GPU_POOL.items()}

def test_exec_properties(tags):
    """exec_properties for a test target with these tags: its test spawn goes to the GPU pool when tagged `gpu`."""
    return gpu_exec_properties("test") if "gpu" in tags else {}

def test_env(tags):
    """env for a test target with these tags: tells --config=gpu's --run_under wrapper
    (tools/gpu/one_gpu.sh) to give a gpu test a GPU of its own."""
    return {"WRP_GPU_TEST": "1"} if "gpu" in tags else {}
