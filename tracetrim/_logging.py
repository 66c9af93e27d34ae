"""tracetrim's structlog loggers, routed through the standard `logging` logger named "tracetrim".

A library must not print: records go to `logging.getLogger("tracetrim")` (or a child such as
"tracetrim.decision.http") as JSON lines, silent until the host configures logging (for example
``logging.basicConfig(level=logging.INFO)``). The "tracetrim" logger carries a `logging.NullHandler`,
so even warnings stay off stderr when the host configured nothing. structlog's own global
configuration is never used, so its default (printing to stdout) cannot leak in.
"""

from __future__ import annotations

import logging
from typing import Any

import structlog

from tracetrim._validators import FieldValueError

LOGGER_NAME = "tracetrim"

logging.getLogger(LOGGER_NAME).addHandler(logging.NullHandler())

_PROCESSORS: list[Any] = [
    structlog.stdlib.filter_by_level,  # a disabled level costs no rendering
    structlog.processors.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    structlog.processors.format_exc_info,
    structlog.processors.JSONRenderer(sort_keys=True),
]


def get_logger(name: str = LOGGER_NAME) -> Any:
    """A structlog logger that writes JSON lines to the stdlib logger ``name`` ("tracetrim" or a child)."""
    if name != LOGGER_NAME and not name.startswith(LOGGER_NAME + "."):
        raise FieldValueError(f"tracetrim loggers live under {LOGGER_NAME!r}, got {name!r}")
    return structlog.wrap_logger(
        logging.getLogger(name), processors=_PROCESSORS, wrapper_class=structlog.stdlib.BoundLogger
    )


logger: Any = get_logger()
