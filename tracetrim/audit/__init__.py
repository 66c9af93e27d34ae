"""The rollout audit: plan records as JSON lines, the rollout questions, the text and HTML reports."""

from tracetrim.audit._observer import JsonLinesObserver
from tracetrim.audit._report import AuditOptions, audit

__all__ = ["AuditOptions", "JsonLinesObserver", "audit"]
