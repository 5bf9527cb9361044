"""The generic capture scripts tools/coverage/newton_coverage.py writes, one per program: the
templates of the Newton example adapter and the MuJoCo Warp test-model adapter (that file's module
docstring says what each binds and steps).
"""

NEWTON_ADAPTER = '''"""Generic coverage adapter for {module} (tools/coverage/newton_coverage.py)."""

import argparse
import ast
import importlib
import inspect
import json
import sys
from pathlib import Path

import warp as wp

import newton
import newton.examples
import newton.viewer
from wrpkg.capture import CaptureSpec

MODULE = {module!r}
HERE = Path(__file__).resolve()
EXCLUDE = set(json.loads(HERE.with_suffix(".exclude.json").read_text())) if HERE.with_suffix(
    ".exclude.json"
).exists() else set()


class _Parser(Exception):
    def __init__(self, parser):
        super().__init__("parser")
        self.parser = parser


def _example_args(mod):
    """The example's own argument defaults: its __main__ block, run up to the parse."""
    tree = ast.parse(Path(mod.__file__).read_text())
    body = None
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            body = node.body
    parser = None
    if body:
        def grab_init(parser=None):
            raise _Parser(parser)

        def grab_parse(self, *args, **kwargs):
            raise _Parser(self)

        saved = (newton.examples.init, argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args)
        newton.examples.init = grab_init
        argparse.ArgumentParser.parse_args = grab_parse
        argparse.ArgumentParser.parse_known_args = grab_parse
        try:
            code = compile(ast.Module(body=body, type_ignores=[]), mod.__file__, "exec")
            exec(code, dict(vars(mod)))
        except _Parser as got:
            parser = got.parser
        except BaseException as exc:
            print(f"coverage adapter: __main__ block of {{MODULE}}: {{type(exc).__name__}}: {{exc}}")
        finally:
            newton.examples.init, argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args = saved
    if parser is None:
        parser = newton.examples.create_parser()
    args = parser.parse_known_args([])[0]
    args.viewer = "null"
    return args


class _EagerCapture:
    """Stands in for wp.ScopedCapture while the Example is built: no graph, the body runs."""

    def __init__(self, *args, **kwargs):
        self.graph = None

    def __enter__(self):
        print("coverage adapter: wp.ScopedCapture in Example.__init__ ran eagerly (no graph)")
        return self

    def __exit__(self, *exc):
        return False


def _unused(device, arrays):
    """Bound arrays the APIC capture in progress has not touched (the harness would refuse them)."""
    from warp._src import context

    apic = context._get_apic_capture_for_device(wp.get_device(device))
    if apic is None:
        return []
    out = []
    for name, arr in arrays.items():
        base, base_ptr, _, _ = apic._find_base(arr)
        if apic._region_key(base, base_ptr) not in apic._regions:
            out.append(name)
    return out


def build(device):
    mod = importlib.import_module(MODULE)
    example_cls = mod.Example
    if hasattr(example_cls, "capture"):
        example_cls.capture = lambda self: setattr(self, "graph", None)
    args = _example_args(mod)
    scoped_capture = wp.ScopedCapture

    def example_capture_eager(*a, **k):
        # A graph the example captures inline in __init__: its body runs eagerly. A library's own
        # capture (Newton's implicit MPM captures and launches its solver loop) stays a capture.
        if sys._getframe(1).f_globals.get("__name__") == MODULE:
            return _EagerCapture(*a, **k)
        return scoped_capture(*a, **k)

    wp.ScopedCapture = example_capture_eager
    try:
        with wp.ScopedDevice(device):
            viewer = newton.viewer.ViewerNull(num_frames=getattr(args, "num_frames", 100))
            try:
                example = example_cls(viewer, args)
            except AttributeError as exc:
                raise RuntimeError(f"coverage adapter: Example read an argument the defaults lack: {{exc}}") from exc
    finally:
        wp.ScopedCapture = scoped_capture
    if getattr(example, "graph", None) is not None:
        raise RuntimeError("coverage adapter: Example captured a CUDA graph outside Example.capture")
    run = getattr(example, "simulate", None)
    if run is None or any(
        p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        for p in inspect.signature(run).parameters.values()
    ):
        print("coverage adapter: the step is Example.step() (no simulate() without arguments)")
        run = example.step
    arrays = {{}}
    bases = set()
    states = [(name, getattr(example, name, None)) for name in ("state_0", "state_1")]
    states = [(name, state) for name, state in states if isinstance(state, newton.State)]
    if not states:
        # e.g. the diffsim examples: a list of states, one per substep
        for attr, value in sorted(vars(example).items()):
            if isinstance(value, newton.State):
                states.append((attr, value))
            elif isinstance(value, (list, tuple)) and value and all(isinstance(v, newton.State) for v in value):
                states += [(f"{{attr}}[0]", value[0]), (f"{{attr}}[{{len(value) - 1}}]", value[-1])]
            elif isinstance(value, (list, tuple)):
                # e.g. example_basic_multi_solver_overlay: layers, each a solver with its own states
                for index, item in enumerate(value):
                    for name in ("state_0", "state_1"):
                        if isinstance(getattr(item, name, None), newton.State):
                            states.append((f"{{attr}}[{{index}}].{{name}}", getattr(item, name)))
    for state_name, state in states:
        for attr, value in sorted(vars(state).items()):
            name = f"{{state_name}}.{{attr}}"
            if not isinstance(value, wp.array) or value.size == 0 or name in EXCLUDE:
                continue
            if value.device != wp.get_device(device):
                continue
            key = (value.ptr, value.capacity)
            if key in bases:
                continue
            bases.add(key)
            arrays[name] = value
    if not arrays:
        raise RuntimeError("coverage adapter: no non-empty wp.array on a newton.State of the Example")

    def step():
        with wp.ScopedDevice(device):
            run()
        unused = _unused(device, arrays)
        if unused:
            HERE.with_suffix(".unused.json").write_text(json.dumps(unused))

    return CaptureSpec(inputs=arrays, outputs=arrays, step=step, keep_alive=[example, viewer])
'''

MJW_ADAPTER = '''"""Generic coverage adapter for mujoco_warp test_data/{xml} (tools/coverage/newton_coverage.py)."""

import json
from pathlib import Path

import mujoco
import mujoco_warp as mjw
import warp as wp

from wrpkg.capture import CaptureSpec

XML = {path!r}
HERE = Path(__file__).resolve()
EXCLUDE = set(json.loads(HERE.with_suffix(".exclude.json").read_text())) if HERE.with_suffix(
    ".exclude.json"
).exists() else set()
INPUTS = ("qpos", "qvel", "act", "ctrl", "mocap_pos", "mocap_quat")
OUTPUTS = ("qpos", "qvel", "qacc", "act", "time", "xpos", "xquat")


def _unused(device, arrays):
    from warp._src import context

    apic = context._get_apic_capture_for_device(wp.get_device(device))
    if apic is None:
        return []
    out = []
    for name, arr in arrays.items():
        base, base_ptr, _, _ = apic._find_base(arr)
        if apic._region_key(base, base_ptr) not in apic._regions:
            out.append(name)
    return out


def build(device):
    mjm = mujoco.MjModel.from_xml_path(XML)
    mjd = mujoco.MjData(mjm)
    with wp.ScopedDevice(device):
        m = mjw.put_model(mjm)
        m.opt.graph_conditional = False
        d = mjw.put_data(mjm, mjd)

    def pick(names):
        out = {{}}
        for name in names:
            arr = getattr(d, name, None)
            if isinstance(arr, wp.array) and arr.size > 0 and name not in EXCLUDE:
                out[name] = arr
        return out

    inputs, outputs = pick(INPUTS), pick(OUTPUTS)

    def step():
        with wp.ScopedDevice(device):
            mjw.step(m, d)
        unused = _unused(device, {{**inputs, **outputs}})
        if unused:
            HERE.with_suffix(".unused.json").write_text(json.dumps(unused))

    return CaptureSpec(inputs=inputs, outputs=outputs, step=step, keep_alive=[m, d])
'''
