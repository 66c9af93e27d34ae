"""The one error type CLI commands raise for user mistakes: printed as one line, exit code 2."""

from __future__ import annotations

from tracetrim._errors import TracetrimError


class CliError(TracetrimError):
    """A user mistake (bad file, bad flag value); shown as one line without a traceback."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
