"""Errors a user can meet. Each carries what happened and what to do about it.

Every layer raises a subclass of :class:`GpaError`; the CLI prints ``message``
and ``hint`` and exits non-zero, the language server shows them as a
diagnostic or a window message. Nothing else should reach a user as a trace.
"""

from __future__ import annotations


class GpaError(Exception):
    """Base error: ``message`` says what happened, ``hint`` what to do."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:  # pragma: no cover - trivial
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class ToolNotFound(GpaError):
    """A required external tool (nvcc, nvdisasm, cuobjdump, ncu, libcupti) is missing."""


class BuildError(GpaError):
    """nvcc (or the configured build command) failed. ``output`` holds its text."""

    def __init__(self, message: str, hint: str = "", output: str = "") -> None:
        super().__init__(message, hint)
        self.output = output


class CubinError(GpaError):
    """A file is not a readable cubin / ELF, or is truncated."""


class BundleError(GpaError):
    """A profile bundle is missing, corrupt, from an unknown schema, or wrong."""


class HarnessError(GpaError):
    """The harness crashed, exited non-zero, timed out or was cancelled."""

    def __init__(self, message: str, hint: str = "", output_tail: str = "", returncode: int | None = None) -> None:
        super().__init__(message, hint)
        self.output_tail = output_tail
        self.returncode = returncode


class ProfilingError(GpaError):
    """Sampling produced nothing or was refused (no GPU, no permission, filtered out)."""


class ConfigError(GpaError):
    """gpa.toml / [tool.gpa] / editor settings are invalid. ``line`` is 1-based when known."""

    def __init__(self, message: str, hint: str = "", path: str | None = None, line: int | None = None) -> None:
        super().__init__(message, hint)
        self.path = path
        self.line = line
