"""Production serving: gunicorn, configured from our settings rather than its command line."""

from __future__ import annotations

import gc
from typing import Any

from gunicorn.app.base import BaseApplication

from blazar_lite.settings import Settings


class _Server(BaseApplication):  # type: ignore[misc]
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        options: dict[str, Any] = {
            "bind": f"{self.settings.api_host}:{self.settings.api_port}",
            "workers": self.settings.api_workers,
            "worker_class": "gthread",
            "threads": 8,
            "timeout": 60,
            "accesslog": None,
        }
        # Newer gunicorn opens a control socket at one fixed path per user, so a second service on
        # the machine would take over the first one's; nothing here uses it.
        if "control_socket_disable" in self.cfg.settings:
            options["control_socket_disable"] = True
        for key, value in options.items():
            self.cfg.set(key, value)

    def load(self):  # type: ignore[no-untyped-def]
        from blazar_lite.app import create_app

        # Each worker builds its own app (and database pool) after the fork.
        app = create_app(self.settings)
        # What the app holds from now on lives as long as the process: keep the garbage
        # collector from walking it again on every full collection (tens of ms on big answers).
        gc.collect()
        gc.freeze()
        return app


def run(settings: Settings) -> None:
    _Server(settings).run()
