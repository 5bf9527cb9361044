"""`wrpkg`: one entry point over the per-tool CLIs (`python -m wrpkg.capture`, `wrpkg.build.pack`, ... are the same)."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys

from wrpkg import WARP_VERSION, __version__
from wrpkg.errors import WrpError
from wrpkg.private_tmp import use_private_tmpdir

# Subcommand -> module. Each module defines `configure_parser(parser)` and `run(args) -> int`.
# Modules are imported only when their subcommand runs, so `wrpkg --help` never loads Warp.
SUBCOMMANDS = {
    "inspect": ("wrpkg.reader.inspection", "summarize a .wrp file or bundle"),
    "capture": (
        "wrpkg.capture.tool",
        "run a capture script and save its graph, golden outputs and capture.json",
    ),
    "kernel-cache": (
        "wrpkg.capture.kernel_cache",
        "compile a library's Warp modules once, as the cache captures start from",
    ),
    "compile": ("wrpkg.build.compile", "compile captured CUDA modules for one SM or PTX"),
    "pack": ("wrpkg.build.pack", "pack a canonical, content-hashed, multi-architecture bundle"),
    "verify": ("wrpkg.reader.verify", "check every bundle file against its manifest"),
    "regolden": (
        "wrpkg.reader.regolden",
        "replay a bundle on a GPU and write a copy whose goldens were made there",
    ),
}


def _available() -> dict[str, tuple[str, str]]:
    found = {}
    for name, (module, summary) in SUBCOMMANDS.items():
        if importlib.util.find_spec(module) is not None:
            found[name] = (module, summary)
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wrpkg",
        description="Build, inspect and verify portable Warp APIC (.wrp) bundles.",
    )
    parser.add_argument(
        "--version", action="version", version=f"wrpkg {__version__} (warp-lang {WARP_VERSION})"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, summary) in _available().items():
        sub.add_parser(name, help=summary, description=summary).set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    tools = _available()
    if argv and argv[0] in tools:
        # The tool's own parser owns everything after its name, --help included.
        return run_tool(tools[argv[0]][0], [argv[0]], argv[1:])
    parser = build_parser()
    # Parse only the subcommand name first; the subcommand's module owns its flags.
    args, rest = parser.parse_known_args(argv)
    if not getattr(args, "_module", None):
        parser.print_help()
        return 2
    return run_tool(args._module, [args.command], rest)


def run_tool(module_name: str, prog: list[str], argv: list[str]) -> int:
    """Runs one tool module with its own parser; WrpErrors become a message and exit 1."""
    use_private_tmpdir()
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=" ".join(["wrpkg", *prog]), description=module.__doc__)
    module.configure_parser(parser)
    args = parser.parse_args(argv)
    try:
        return int(module.run(args) or 0)
    except WrpError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader (e.g. `| head`) closed the pipe: not an error of ours.
        sys.stderr.close()
        return 0
    # The checks turn what a user can cause into WrpErrors that name the file; these are the
    # net under them, so that what one missed is still one line and exit 1, not a traceback.
    except OSError as err:
        where = err.filename if err.filename is not None else f"wrpkg {' '.join(prog)}"
        print(
            f"error: {where}: {err.strerror or err}\n  fix: check that the path exists and this user can read it",
            file=sys.stderr,
        )
        return 1
    except (MemoryError, RecursionError) as err:
        from wrpkg.strict_json import MAX_JSON_BYTES, MAX_JSON_DEPTH  # noqa: PLC0415 - only on this path

        what = "ran out of memory" if isinstance(err, MemoryError) else "met input nested too deeply"
        print(
            f"error: wrpkg {' '.join(prog)} {' '.join(argv)}: {what}\n"
            f"  fix: check the input files; a bundle's manifests are at most {MAX_JSON_BYTES >> 20} MiB and "
            f"{MAX_JSON_DEPTH} levels deep",
            file=sys.stderr,
        )
        return 1


def tool_main(module_name: str, name: str | None = None) -> None:
    """For `python -m wrpkg.<tool>`: the module's `if __name__ == "__main__"` calls this.

    `name` is the tool's name in messages (`wrpkg <name>`); by default the module's last part."""
    name = name or module_name.rsplit(".", 1)[-1]
    sys.exit(run_tool(module_name, [name], sys.argv[1:]))


if __name__ == "__main__":
    sys.exit(main())
