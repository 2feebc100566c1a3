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


def _deleting_a_deleted_endpoint_succeeds() -> None:
    """On AWS, DeleteVpcEndpoints of an endpoint already deleted does not fail (the provider
    takes its NotFound as done). moto keeps a deleted gateway endpoint and removes its routes
    again, which fails (InvalidRoute.NotFound): a request the SDK retries after a lost response
    then failed a whole teardown. Endpoints already deleted are skipped, as AWS does."""
    from moto.ec2.models.vpcs import VPCBackend

    if getattr(VPCBackend.delete_vpc_endpoints, "skips_deleted", False):
        return
    delete = VPCBackend.delete_vpc_endpoints

    def delete_live_endpoints(self: VPCBackend, vpce_ids: list[str] | None = None) -> None:
        live = [i for i in vpce_ids or [] if getattr(self.vpc_end_points.get(i), "state", None) != "deleted"]
        delete(self, live)

    delete_live_endpoints.skips_deleted = True  # type: ignore[attr-defined]
    VPCBackend.delete_vpc_endpoints = delete_live_endpoints  # type: ignore[method-assign]


def start_emulator() -> Emulator:
    # AWS managed policies (e.g. AmazonEKSClusterPolicy) exist only when moto loads them.
    os.environ["MOTO_IAM_LOAD_MANAGED_POLICIES"] = "true"
    _deleting_a_deleted_endpoint_succeeds()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    from moto.server import DomainDispatcherApplication, create_backend_app

    extensions = EmulatorExtensions(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, extensions, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return Emulator(f"http://127.0.0.1:{server.server_port}", extensions, server, thread)
