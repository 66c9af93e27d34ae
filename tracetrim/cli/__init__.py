"""The `tracetrim` command line."""

from tracetrim.cli._app import build_parser, main

__all__ = ["build_parser", "main"]
