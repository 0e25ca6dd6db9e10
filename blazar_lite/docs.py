"""`/docs`: a readable page of the OpenAPI description, rendered here (no scripts from elsewhere)."""

from __future__ import annotations

import html
from typing import Any

from flask import Blueprint, Flask, Response, current_app

blp = Blueprint("docs", __name__)

_METHODS = ("get", "put", "post", "patch", "delete")


def openapi_spec(app: Flask) -> dict[str, Any]:
    """The OpenAPI document of `app`, as served at /openapi.json."""
    return app.extensions["flask-smorest"]["apis"][""]["ext_obj"].described_spec().to_dict()


@blp.route("/docs")
def docs() -> Response:
    spec = openapi_spec(current_app)
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(spec['info']['title'])}"
           " API</title><style>body{font-family:sans-serif;max-width:60em;margin:auto}"
           "code{background:#eee;padding:0 .2em}h3{margin-bottom:.2em}</style></head><body>",
           f"<h1>{html.escape(spec['info']['title'])} {html.escape(spec['info']['version'])}</h1>",
           "<p>Machine-readable description: <a href='/openapi.json'>/openapi.json</a>.</p>"]
    for path, item in spec.get("paths", {}).items():
        for method in _METHODS:
            operation = item.get(method)
            if not operation:
                continue
            out.append(f"<h3><code>{method.upper()} {html.escape(path)}</code></h3>")
            summary = operation.get("summary") or operation.get("description") or ""
            out.append(f"<p>{html.escape(summary)}</p>")
            codes = ", ".join(sorted(operation.get("responses", {})))
            out.append(f"<p>Responses: {html.escape(codes)}</p>")
    out.append("</body></html>")
    return Response("\n".join(out), mimetype="text/html")
