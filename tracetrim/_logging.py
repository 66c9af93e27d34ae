"""tracetrim's structlog logger, routed through the standard `logging` logger named "tracetrim".

A library must not print: records go to `logging.getLogger("tracetrim")` as JSON lines, silent
until the host configures logging (for example ``logging.basicConfig(level=logging.INFO)``).
"""

from __future__ import annotations

import logging
from typing import Any

import structlog

logger: Any = structlog.wrap_logger(
    logging.getLogger("tracetrim"),
    processors=[
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        structlog.processors.JSONRenderer(sort_keys=True),
    ],
)
