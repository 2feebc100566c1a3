"""`tenant-guide`: a tenant's day-one page."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from cli import common
from profiles import PlatformConfig

if TYPE_CHECKING:
    pass


def command_tenant_guide(config: PlatformConfig, args: argparse.Namespace) -> int:
    from operate.tenant_guide import UnknownTenant, tenant_guide

    if not config.workloads.tenants:
        print(f"profile {config.name} has no tenants (workloads.tenants)", file=sys.stderr)
        return common.EXIT_USER_ERROR
    try:
        print(tenant_guide(config, args.tenant or config.workloads.tenants[0].name), end="")
    except UnknownTenant as error:
        print(error, file=sys.stderr)
        return common.EXIT_USER_ERROR
    return 0
