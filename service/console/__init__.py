"""The console for people at /ui: server-rendered pages over the same use cases as the API."""

from .gate import ConsoleGate
from .pages import router as console_pages
from .rendering import render_error_page

__all__ = ["ConsoleGate", "console_pages", "render_error_page"]
