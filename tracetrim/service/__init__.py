"""The HTTP service (``pip install tracetrim[service]``): compaction, restore and archive listing."""

from tracetrim.service._app import SCHEMA_VERSION, compact_document, create_app
from tracetrim.service._errors import ApiError
from tracetrim.service._settings import DEFAULT_MAX_BODY_BYTES, ServiceSettings, make_archive

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "SCHEMA_VERSION",
    "ApiError",
    "ServiceSettings",
    "compact_document",
    "create_app",
    "make_archive",
]
