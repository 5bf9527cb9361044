"""The one error hierarchy of wrpkg: every failure a user can cause is a WrpError.

Each error says what is wrong, where (file, target, offset), and how to fix it, so the
CLIs can print it as-is and exit non-zero without a traceback.
"""

from __future__ import annotations


class WrpError(Exception):
    """Base class: what is wrong, and how to fix it.

    Args:
      message: what is wrong and where (file, target, offset).
      fix: an optional sentence telling the user what to change; printed on its own line.
    """

    def __init__(self, message: str, *, fix: str | None = None):
        self.message = message
        self.fix = fix
        super().__init__(message if not fix else f"{message}\n  fix: {fix}")


class WrpFormatError(WrpError):
    """A .wrp file (or a record inside it) breaks a rule of the format.

    Args:
      path: the file, or None for bytes in memory.
      section: the part of the file (header, a module record, ...).
      offset: the byte offset of the problem.
      rule: the rule broken.
      fix: as for WrpError.
    """

    def __init__(self, path, section: str, offset: int, rule: str, *, fix: str | None = None):
        self.path = str(path) if path is not None else "<bytes>"
        self.section = section
        self.offset = offset
        self.rule = rule
        super().__init__(f"{self.path}: {section} at byte {offset}: {rule}", fix=fix)


class CaptureError(WrpError):
    """The user's capture script failed, or its contract was not met."""


class CompileError(WrpError):
    """NVRTC or nvFatbin rejected a module, or an architecture is not supported."""


class BundleError(WrpError):
    """A bundle could not be assembled or does not match its manifest."""


class VerifyError(BundleError):
    """A bundle file was tampered with, truncated, or does not match the manifest."""


class ArchMismatchError(WrpError):
    """A bundle holds no code the current device can run."""
