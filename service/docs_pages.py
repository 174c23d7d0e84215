"""/docs and /redoc served offline: Swagger UI and ReDoc from the fastapi-offline package's files.

Their assets are mounted under /ui/static/vendor (served by the console gate without a session, like
the docs pages themselves), so no page loads anything from outside the server.
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse

__all__ = ["VENDOR_DIR", "VENDOR_URL", "add_offline_docs"]

VENDOR_DIR = Path(fastapi_offline.__file__).parent / "static"
VENDOR_URL = "/ui/static/vendor"


def add_offline_docs(app: FastAPI) -> None:
    """GET /docs, /docs/oauth2-redirect and /redoc, with every asset on this server."""
    title = f"{app.title} API"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=title,
            oauth2_redirect_url="/docs/oauth2-redirect",
            swagger_js_url=f"{VENDOR_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{VENDOR_URL}/swagger-ui.css",
            swagger_favicon_url=f"{VENDOR_URL}/favicon.png",
        )

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    def swagger_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url="/openapi.json",
            title=title,
            with_google_fonts=False,
            redoc_js_url=f"{VENDOR_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{VENDOR_URL}/favicon.png",
        )
