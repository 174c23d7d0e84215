"""xmemo-server's compactor: `reflect` consolidates episodes and keeps the memory lifecycle, plan first."""

from .audit import list_audit
from .options import ACTIONS, ReflectRequest
from .reflect import prepare_plan, reflect
from .reflect_report import ReflectReport, render_reflect_text
from .settings import ReflectSettings

__all__ = [
    "ACTIONS",
    "ReflectReport",
    "ReflectRequest",
    "ReflectSettings",
    "list_audit",
    "prepare_plan",
    "reflect",
    "render_reflect_text",
]
