"""The `tracetrim` command line."""

from tracetrim._public import publish
from tracetrim.cli._app import build_parser, main

__all__ = ["build_parser", "main"]

publish(__name__, globals())
