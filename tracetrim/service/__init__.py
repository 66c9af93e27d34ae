"""The HTTP service (``pip install tracetrim[service]``): compaction (native, ReMe), restore, System One."""

from tracetrim._public import publish
from tracetrim.service._app import SCHEMA_VERSION, compact_document, create_app
from tracetrim.service._errors import ApiError
from tracetrim.service._reme import REME_SCHEMA_VERSION
from tracetrim.service._server import ServerLimits, serve, server_config
from tracetrim.service._settings import (
    DEFAULT_MAX_BLOCKS,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_MESSAGES,
    LOOPBACK_HOSTS,
    TOKEN_ENV,
    ServiceSettings,
    make_archive,
)

__all__ = [
    "DEFAULT_MAX_BLOCKS",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_MESSAGES",
    "LOOPBACK_HOSTS",
    "REME_SCHEMA_VERSION",
    "SCHEMA_VERSION",
    "TOKEN_ENV",
    "ApiError",
    "ServerLimits",
    "ServiceSettings",
    "compact_document",
    "create_app",
    "make_archive",
    "serve",
    "server_config",
]

publish(__name__, globals())
