"""EFA: the interface layout of a launch template, and the self-referencing security group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cdktf_cdktf_provider_aws.security_group import SecurityGroup
from constructs import Construct

from components.network import EGRESS_RULE, INGRESS_RULE
from profiles.catalog import GpuInstanceType

InterfaceType = Literal["efa", "efa-only"] | None  # None: a plain ENA interface


@dataclass(frozen=True, kw_only=True)
class NetworkInterfaceSlot:
    network_card_index: int
    device_index: int
    interface_type: InterfaceType


def efa_interface_layout(entry: GpuInstanceType) -> list[NetworkInterfaceSlot]:
    """One EFA interface on each of the entry's EFA cards, following EC2's current guidance:

    - the primary interface (card 0, device 0) is `efa` (EFA with an IP), never `efa-only`;
    - every other EFA card gets an `efa-only` interface at device index 0;
    - where card 0 takes no EFA interface (p6-b300's card 0 carries ENA only; P6e-GB200's EFA
      cards are 1, 5, 9 and 13), the primary is plain ENA.
    """
    if not entry.efa_supported:
        return []
    slots = []
    if 0 not in entry.efa_network_cards:
        slots.append(NetworkInterfaceSlot(network_card_index=0, device_index=0, interface_type=None))
    for card in entry.efa_network_cards:
        primary = card == 0
        slots.append(
            NetworkInterfaceSlot(
                network_card_index=card, device_index=0, interface_type="efa" if primary else "efa-only"
            )
        )
    return slots


@dataclass(frozen=True, kw_only=True)
class EfaSecurityGroupProps:
    name: str
    """The group's name."""
    vpc_id: str
    """The VPC the group lives in."""


class EfaSecurityGroup(Construct):
    """All traffic to and from members of this group only (EFA needs it); no CIDR rules. Exposes `id`."""

    def __init__(self, scope: Construct, id_: str, *, props: EfaSecurityGroupProps):
        super().__init__(scope, id_)
        group_id = SecurityGroup(
            self,
            "group",
            name=props.name,
            vpc_id=props.vpc_id,
            description="EFA traffic between GPU nodes: all protocols, members only",
            tags={"Name": props.name},
        ).id  # each attribute read is a jsii round trip: read once
        INGRESS_RULE.add(
            self,
            "from-self",
            security_group_id=group_id,
            referenced_security_group_id=group_id,
            ip_protocol="-1",
            description="EFA from members",
        )
        EGRESS_RULE.add(
            self,
            "to-self",
            security_group_id=group_id,
            referenced_security_group_id=group_id,
            ip_protocol="-1",
            description="EFA to members",
        )
        self._id = group_id

    @property
    def id(self) -> str:
        """The group's id."""
        return self._id
