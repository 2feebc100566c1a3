"""What a profile costs per hour before it is deployed, at AWS's on-demand list prices.

The prices come from the AWS Price List API at the time of asking (`aws pricing get-products`,
served from us-east-1 for every region), never from a table in this repository that would go
stale. Priced: the nodes that run from the first apply (the system group and the GPU groups at
their desired size, plus what the GPU groups reach at their maximum), the NAT gateways and the EKS
control plane. Named but not priced, with their sizes: what bills per GB or per request, or is
paid up front (FSx, the MLflow database, EBS, S3, data transfer, Capacity Blocks) and what
Karpenter launches on demand.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from addons.contributions import enabled_parts
from profiles.capacity import CapacityBlock, OdcrCapacity

if TYPE_CHECKING:
    from profiles.models import PlatformConfig

AwsCli = Callable[[list[str]], subprocess.CompletedProcess[str]]

PRICING_REGION = "us-east-1"  # the Price List API's endpoint that serves every region
# EKS control plane, standard support: a flat rate per cluster-hour (EKS pricing page; the Price
# List API files it under usage types that differ per region, so it is the one figure kept here).
EKS_CLUSTER_HOURLY_USD = 0.10
HOURS_PER_MONTH = 730


class PriceUnavailable(RuntimeError):
    """The Price List API could not be asked, or had no on-demand hourly price for an item."""


@dataclass(frozen=True)
class CostLine:
    what: str
    count: int
    unit_usd: float
    note: str = ""

    @property
    def hourly_usd(self) -> float:
        return self.count * self.unit_usd


@dataclass(frozen=True)
class CostEstimate:
    running: tuple[CostLine, ...]
    """What bills every hour from the first apply."""
    at_most: tuple[CostLine, ...]
    """What the GPU groups add at their maximum size."""
    not_priced: tuple[str, ...]
    """What this estimate leaves out, with its size."""

    @property
    def hourly_usd(self) -> float:
        return sum(line.hourly_usd for line in self.running)

    @property
    def hourly_max_usd(self) -> float:
        return self.hourly_usd + sum(line.hourly_usd for line in self.at_most)


def _hourly(products: dict[str, object]) -> float:
    """The one on-demand hourly USD price in a Price List API answer (one product per line). Zero
    prices (Capacity Block listings share the attributes) and non-hourly ones are skipped; two
    different hourly prices mean the filters did not name one product, which is an error."""
    found = {
        float(dimension["pricePerUnit"]["USD"])
        for text in products.get("PriceList", [])  # type: ignore[attr-defined]
        for term in json.loads(text).get("terms", {}).get("OnDemand", {}).values()
        for dimension in term.get("priceDimensions", {}).values()
        if dimension.get("unit") in ("Hrs", "Hours") and float(dimension["pricePerUnit"]["USD"]) > 0
    }
    if len(found) > 1:
        raise PriceUnavailable(
            f"several on-demand hourly prices {sorted(found)}: the filters match more than one product"
        )
    if not found:
        raise PriceUnavailable("no on-demand hourly price in the answer")
    return found.pop()


def _ask(aws: AwsCli, service: str, filters: dict[str, str]) -> float:
    terms = [f"Type=TERM_MATCH,Field={field},Value={value}" for field, value in filters.items()]
    args = ["pricing", "get-products", "--region", PRICING_REGION, "--service-code", service, "--filters", *terms]
    try:
        answer = aws([*args, "--output", "json"])
    except (OSError, subprocess.TimeoutExpired) as error:  # no AWS CLI here, or no answer
        raise PriceUnavailable(f"cannot run the AWS CLI: {error}") from error
    if answer.returncode != 0:
        raise PriceUnavailable((answer.stderr or answer.stdout).strip() or "aws pricing get-products failed")
    try:
        return _hourly(json.loads(answer.stdout or "{}"))
    except PriceUnavailable as error:
        raise PriceUnavailable(f"{service} {filters}: {error}") from error


def instance_hourly(aws: AwsCli, region: str, instance_type: str) -> float:
    """Linux, shared tenancy, no pre-installed software: what an EKS node of this type costs."""
    return _ask(
        aws,
        "AmazonEC2",
        {
            "instanceType": instance_type,
            "regionCode": region,
            "operatingSystem": "Linux",
            "tenancy": "Shared",
            "preInstalledSw": "NA",
            "capacitystatus": "Used",
            "marketoption": "OnDemand",
            "operation": "RunInstances",
        },
    )


def nat_gateway_hourly(aws: AwsCli, region: str) -> float:
    return _ask(aws, "AmazonEC2", {"regionCode": region, "productFamily": "NAT Gateway", "group": "NGW:NatGateway"})


def estimate(config: PlatformConfig, aws: AwsCli) -> CostEstimate:
    cluster = config.cluster
    prices: dict[str, float] = {}  # asked once per instance type, however many groups run it

    def hourly(instance_type: str) -> float:
        if instance_type not in prices:
            prices[instance_type] = instance_hourly(aws, config.region, instance_type)
        return prices[instance_type]

    system = cluster.system_node_group
    system_type = system.instance_types[0]  # the group's first choice
    running = [CostLine(f"system nodes ({system_type})", system.desired_size, hourly(system_type))]
    at_most: list[CostLine] = []
    not_priced: list[str] = []
    for group in cluster.gpu_node_groups:
        if isinstance(group.capacity, CapacityBlock):
            not_priced.append(
                f"GPU group {group.name}: {group.capacity.instance_count} x {group.instance_type} on a Capacity Block "
                "(its fee is paid when the block is bought)"
            )
            continue
        price = hourly(group.instance_type)
        note = "reserved: billed whether used or not" if isinstance(group.capacity, OdcrCapacity) else ""
        running.append(CostLine(f"GPU group {group.name} ({group.instance_type})", group.desired_size, price, note))
        if group.max_size > group.desired_size:
            at_most.append(
                CostLine(f"GPU group {group.name} up to max_size", group.max_size - group.desired_size, price)
            )
    nats = len(cluster.vpc.availability_zones) if cluster.vpc.nat_gateways == "per_az" else 1
    running.append(CostLine("NAT gateways (plus per GB processed)", nats, nat_gateway_hourly(aws, config.region)))
    running.append(CostLine("EKS control plane (standard support)", 1, EKS_CLUSTER_HOURLY_USD))
    fsx = config.storage.fsx
    if fsx.enabled:
        not_priced.append(f"FSx for Lustre: {fsx.storage_capacity_gib} GiB {fsx.deployment_type} (per GB-month)")
    not_priced += [line for part in enabled_parts(config) for line in part.not_priced(config)]
    not_priced.append("EBS volumes, S3 storage and requests, data transfer, CloudWatch logs")
    return CostEstimate(tuple(running), tuple(at_most), tuple(not_priced))


def report(config: PlatformConfig, cost: CostEstimate) -> list[str]:
    lines = [f"What {config.name} costs per hour in {config.region} (on-demand list prices, USD, AWS Price List API):"]
    for line in cost.running:
        note = f"  ({line.note})" if line.note else ""
        lines.append(f"  {line.what:<48} {line.count:>3} x {line.unit_usd:>9.4f} = {line.hourly_usd:>9.2f}{note}")
    lines.append(
        f"  running from the first apply: {cost.hourly_usd:.2f}/hour, about {cost.hourly_usd * HOURS_PER_MONTH:,.0f}"
        f" per month of {HOURS_PER_MONTH} hours"
    )
    for line in cost.at_most:
        lines.append(f"  {line.what:<48} {line.count:>3} x {line.unit_usd:>9.4f} = {line.hourly_usd:>9.2f}")
    if cost.at_most:
        lines.append(f"  with every GPU group at max_size: {cost.hourly_max_usd:.2f}/hour")
    lines.append("Not included:")
    lines += [f"  - {item}" for item in cost.not_priced]
    lines.append(
        "Nodes bill from the cluster layer's first apply until make pause (GPU and CPU nodes stop) or make destroy."
    )
    return lines
