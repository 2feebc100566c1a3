"""Where a profile's zones are: its VPC's availability zones and its GPU Local Zone belong to the
profile's region, and what must stay in one zone does (checks of the whole profile, called by
profiles/models.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from profiles.aws_facts import zones
from profiles.base import FieldProblem
from profiles.storage import FsxConfig
from profiles.vpc import VpcConfig, is_local_zone, is_zone_id, local_zone_id_prefix, local_zone_region


def zone_problems(region: str, vpc: VpcConfig) -> Iterator[FieldProblem]:
    """The VPC's availability zones, and its GPU Local Zone, are the region's."""
    # Zone names map to different physical zones in each account (the zone IDs do not); the
    # recorded zones say which names and IDs a region has, not which of them an account can use.
    known = zones(region)
    ids = sorted(set(known.values()))
    for index, zone in enumerate(vpc.availability_zones):
        where = ("cluster", "vpc", "availability_zones", index)
        # EKS places its control plane's interfaces in these subnets, and none in a Local Zone's
        # (EKS User Guide, "Launch low-latency EKS clusters with AWS Local Zones").
        local = ""
        if is_local_zone(zone):
            local = "; a Local Zone takes the GPU subnet only: cluster.vpc.gpu_local_zone"
        if is_zone_id(zone):
            if ids and zone not in ids:  # a region not recorded: the plan's offering check still runs
                yield FieldProblem(where, zone, f"not a zone ID of region {region}{local}", allowed=", ".join(ids))
        elif not re.fullmatch(rf"{re.escape(region)}[a-z]", zone) or (known and zone not in known):
            names = ", ".join(known) if known else f"{region}a, {region}b, ..."
            yield FieldProblem(
                where,
                zone,
                f"not an availability zone of region {region}{local}",
                allowed=f"{names} (or, all of them so, zone IDs: {', '.join(ids)})" if ids else names,
            )
    yield from _local_zone_in_region(region, vpc.gpu_local_zone, ids)


def _local_zone_in_region(region: str, zone: str | None, ids: list[str]) -> Iterator[FieldProblem]:
    """The GPU Local Zone is one of the region's: its name starts with the region (us-east-1-dfw-2a),
    its ID with the prefix of the region's zone IDs (use1-dfw2-az1). Which Local Zones exist and which
    the account opted in to, the plan checks (components/network.py)."""
    if zone is None:
        return
    prefixes = sorted({zone_id.split("-")[0] for zone_id in ids})
    if is_zone_id(zone):
        if prefixes and local_zone_id_prefix(zone) not in prefixes:
            yield FieldProblem(
                ("cluster", "vpc", "gpu_local_zone"),
                zone,
                f"not a Local Zone of region {region}",
                allowed=f"the ID of one of its Local Zones, {prefixes[0]}-<location><n>-az<n> "
                f"(e.g. {prefixes[0]}-dfw2-az1 in us-east-1)",
            )
    elif local_zone_region(zone) != region:
        yield FieldProblem(
            ("cluster", "vpc", "gpu_local_zone"),
            zone,
            f"not a Local Zone of region {region}",
            allowed=f"the name of one of its Local Zones, {region}-<location>-<n><letter> "
            "(e.g. us-east-1-dfw-2a in us-east-1)",
        )


def lustre_over_efa_problems(vpc: VpcConfig, fsx: FsxConfig) -> Iterator[FieldProblem]:
    """EFA does not reach across zones (AWS ParallelCluster User Guide, "Elastic Fabric Adapter": EFA
    "isn't supported over different availability zones"), and the file system stays in the region's GPU
    availability zone while the GPU nodes run in the Local Zone."""
    zone = vpc.gpu_local_zone
    if zone is not None and fsx.enabled and fsx.efa_enabled:
        yield FieldProblem(
            ("storage", "fsx", "efa_enabled"),
            True,
            f"the GPU nodes run in the Local Zone {zone} and the file system in {vpc.gpu_az}: Lustre over EFA "
            "would cross zones, which EFA does not",
            allowed="efa_enabled: false (Lustre over TCP), or no cluster.vpc.gpu_local_zone",
        )
