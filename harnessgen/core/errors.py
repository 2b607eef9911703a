"""One root exception; subclasses say who must act."""

import re


class HarnessgenError(Exception):
    """Root of every error harnessgen raises on purpose."""


class ConfigError(HarnessgenError):
    """The user must act: the message names the flag or file to fix."""


class Unsupported(HarnessgenError):
    """A program or transformation harnessgen cannot handle yet; skipped and recorded."""


class InternalError(HarnessgenError):
    """A bug in harnessgen itself."""


class ToolMissing(ConfigError):
    """An external program (compiler, afl-fuzz) is not installed."""


class BuildError(HarnessgenError):
    """Generated code did not build. For post this is a finding (BUILD_FAILURE);
    for pre it means the cutout itself cannot be built (Unsupported)."""

    def __init__(self, message: str, side: str = "", log: str = "", cause: str = "", generator: str = ""):
        super().__init__(message)
        self.side = side
        self.log = log
        # what DaCe's code generator raised where it refused the side's SDFG (before any compiler)
        self.generator = generator
        # a known construct DaCe's code generator cannot compile (codegen_causes), where the
        # build stopped before compiling because pre holds it
        self.cause = cause

    @property
    def first_error(self) -> str:
        """The compiler's first error line (file:line: error: ...), or ''."""
        return next((line.strip() for line in self.log.splitlines() if "error:" in line), "")

    @property
    def of_the_code(self) -> bool:
        """Whether the failure says something of the code built (a compiler's diagnostic, or a
        known cause matched before compiling) rather than of the machine (a compiler killed,
        gone, silent): only such a failure of a program's side can be a finding."""
        return (bool(self.cause or self.first_error or self.generator) and self.side in ("hg_pre", "hg_post")
                and not self.missing_header)

    @property
    def missing_header(self) -> str:
        """A system header the compiler did not find (``cblas.h`` for DaCe's BLAS and LAPACK
        expansions): the machine lacks a library, which says nothing of the code ('' where
        none is missing)."""
        match = re.search(r"fatal error: '([^']+)' file not found", self.first_error)
        return match.group(1) if match else ""


class EngineError(HarnessgenError):
    """The fuzzing engine could not run for one instance (it did not start, or its build lacks
    what it runs): that instance's ERROR verdict, never the end of a run. ``log``: where its
    own output is."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log
