"""A local AWS emulator for the emulated deploy: moto's server on 127.0.0.1, in this process,
with small extensions for the APIs moto lacks and this platform uses (see extensions.py)."""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass

from werkzeug.serving import make_server

from tests.emulator.extensions import EmulatorExtensions


@dataclass
class Emulator:
    endpoint: str
    extensions: EmulatorExtensions
    _server: object
    _thread: threading.Thread

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=10)


def start_emulator() -> Emulator:
    # AWS managed policies (e.g. AmazonEKSClusterPolicy) exist only when moto loads them.
    os.environ["MOTO_IAM_LOAD_MANAGED_POLICIES"] = "true"
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    from moto.server import DomainDispatcherApplication, create_backend_app

    extensions = EmulatorExtensions(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, extensions, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return Emulator(f"http://127.0.0.1:{server.server_port}", extensions, server, thread)
