"""Invariants of the cluster layer's synthesized JSON that matter on real hardware."""

from __future__ import annotations

import base64
import email
import json
from datetime import UTC, datetime

import pytest
import yaml

from components.efa import efa_interface_layout
from profiles.capacity import block_sizes
from profiles.catalog import CATALOG
from profiles.versions import GPU_AMI_TYPES
from tests.cases import FIXTURES, SHIPPED
from tests.synth_helpers import by_path, path_of, ref, resources, target

ALL = SHIPPED + FIXTURES


def cluster(synthesized, profile):
    return synthesized.stack(profile, "cluster")


def gpu_templates(stack) -> dict[str, dict]:
    """GPU launch templates keyed by node group name."""
    return {
        path_of(body).split("/")[1].removeprefix("gpu-"): body
        for body in resources(stack, "aws_launch_template").values()
        if "/gpu-" in path_of(body)
    }


def gpu_node_groups(stack) -> dict[str, dict]:
    return {
        body["node_group_name"]: body
        for body in resources(stack, "aws_eks_node_group").values()
        if body["ami_type"] in GPU_AMI_TYPES.values()  # x86_64, or arm64 for Grace (P6e-GB200)
    }


@pytest.mark.parametrize("profile, expected", [("p5-training", 32), ("p5en-training", 16), ("gpu-validation", 1)])
def test_efa_interface_count_matches_the_catalog(synthesized, profile, expected):
    (template,) = gpu_templates(cluster(synthesized, profile)).values()
    efa = [nic for nic in template["network_interfaces"] if nic.get("interface_type") in ("efa", "efa-only")]
    assert len(efa) == expected
    instance_type = synthesized.configs[profile].cluster.gpu_node_groups[0].instance_type
    assert CATALOG[instance_type].max_efa_interfaces == expected


@pytest.mark.parametrize("profile", ALL)
def test_interface_layout_follows_ec2_rules(synthesized, profile):
    stack = cluster(synthesized, profile)
    for name, template in gpu_templates(stack).items():
        nics = template.get("network_interfaces")
        if not nics:
            continue
        primary = [n for n in nics if n["network_card_index"] == 0 and n["device_index"] == 0]
        assert len(primary) == 1, f"{name}: exactly one primary interface"
        assert primary[0].get("interface_type") != "efa-only", f"{name}: efa-only may never be the primary"
        cards = [n["network_card_index"] for n in nics]
        assert len(cards) == len(set(cards)), f"{name}: one interface per network card"
        assert all(n["device_index"] == 0 for n in nics), f"{name}: device index above 0 fails on P5 cards"
        assert all("associate_public_ip_address" not in n for n in nics)
        efa_sg = by_path(stack, "aws_security_group", "efa-sg/group")[0]
        assert all(ref("aws_security_group", efa_sg) in n["security_groups"] for n in nics)
        assert "vpc_security_group_ids" not in template


def test_p6_b300_keeps_card_zero_for_ena(synthesized):
    nics = gpu_templates(cluster(synthesized, "odcr"))["b300-odcr"]["network_interfaces"]
    assert nics[0] == {**nics[0], "network_card_index": 0, "device_index": 0}
    assert "interface_type" not in nics[0]
    assert [(n["network_card_index"], n["interface_type"]) for n in nics[1:]] == [(c, "efa-only") for c in range(1, 17)]


def test_p6e_gb200_takes_one_efa_only_interface_per_gpu_pair_of_cards():
    """EC2's EFA guide for P6e-GB200: ENA on card 0, one EFA-only interface on one card of each GPU's
    pair ([1, 3], [5, 7], [9, 11], [13, 15]): 4 x 400 Gbps."""
    slots = efa_interface_layout(CATALOG["p6e-gb200.36xlarge"])
    assert [(s.network_card_index, s.device_index, s.interface_type) for s in slots] == [
        (0, 0, None),
        (1, 0, "efa-only"),
        (5, 0, "efa-only"),
        (9, 0, "efa-only"),
        (13, 0, "efa-only"),
    ]


def test_layout_function_for_every_catalog_entry():
    for entry in CATALOG.values():
        slots = efa_interface_layout(entry)
        efa = [s for s in slots if s.interface_type]
        assert len(efa) == entry.efa_interfaces, entry.name
        assert all(s.network_card_index < entry.network_cards for s in slots), entry.name
        if slots:
            assert slots[0].network_card_index == 0 and slots[0].interface_type != "efa-only"


@pytest.mark.parametrize("profile", ALL)
def test_efa_security_group_references_only_itself(synthesized, profile):
    stack = cluster(synthesized, profile)
    if not any(g.efa_enabled for g in synthesized.configs[profile].cluster.gpu_node_groups):
        assert not resources(stack, "aws_vpc_security_group_egress_rule")
        return
    group_id = by_path(stack, "aws_security_group", "efa-sg/group")[0]
    own = ref("aws_security_group", group_id)
    rules = [
        r
        for kind in ("aws_vpc_security_group_ingress_rule", "aws_vpc_security_group_egress_rule")
        for r in resources(stack, kind).values()
        if r["security_group_id"] == own
    ]
    assert len(rules) == 2
    for rule in rules:
        assert rule["referenced_security_group_id"] == own
        assert not {"cidr_ipv4", "cidr_ipv6", "prefix_list_id"} & set(rule)
    # No rule in the layer opens anything to a CIDR range.
    for kind in (
        "aws_vpc_security_group_ingress_rule",
        "aws_vpc_security_group_egress_rule",
        "aws_security_group_rule",
    ):
        assert all("cidr_ipv4" not in r and "cidr_blocks" not in r for r in resources(stack, kind).values())


@pytest.mark.parametrize("profile", ALL)
def test_gpu_nodes_only_in_the_one_private_gpu_subnet(synthesized, profile):
    stack = cluster(synthesized, profile)
    vpc = synthesized.configs[profile].cluster.vpc
    zone = vpc.gpu_node_zone  # the GPU AZ, or the Local Zone (tests/test_local_zones.py)
    prefix = "local" if vpc.gpu_local_zone else "private"
    subnet_id = by_path(stack, "aws_subnet", f"network/{prefix}-{zone}")[0]
    for name, group in gpu_node_groups(stack).items():
        assert group["subnet_ids"] == [ref("aws_subnet", subnet_id)], name
    subnet = resources(stack, "aws_subnet")[subnet_id]
    placed_by = "availability_zone_id" if vpc.zone_ids else "availability_zone"
    assert subnet[placed_by] == zone and not subnet.get("map_public_ip_on_launch")
    # Internal load balancers may use an AZ's GPU subnet; the Local Zone's holds the GPU nodes only.
    assert subnet["tags"].get("kubernetes.io/role/internal-elb") == (None if vpc.gpu_local_zone else "1")
    # Its default route goes to a NAT gateway, never the internet gateway.
    routes = [r for r in resources(stack, "aws_route").values() if f"{prefix}-{zone}-default" in path_of(r)]
    assert len(routes) == 1 and "nat_gateway_id" in routes[0] and "gateway_id" not in routes[0]


@pytest.mark.parametrize("profile", ALL)
def test_every_launch_template_requires_imdsv2_and_encrypts_root(synthesized, profile):
    for template in resources(cluster(synthesized, profile), "aws_launch_template").values():
        assert template["metadata_options"]["http_tokens"] == "required"
        # Hop limit 1: IMDS (and the node role's credentials) stay out of pods' network namespaces.
        assert template["metadata_options"]["http_put_response_hop_limit"] == 1
        (volume,) = template["block_device_mappings"]
        assert volume["ebs"]["encrypted"] == "true" and volume["ebs"]["volume_type"] == "gp3"


@pytest.mark.parametrize("profile", ALL)
def test_gpu_node_groups_carry_taint_ami_and_repair(synthesized, profile):
    groups = gpu_node_groups(cluster(synthesized, profile))
    assert set(groups) == {g.name for g in synthesized.configs[profile].cluster.gpu_node_groups}
    configs = {g.name: g for g in synthesized.configs[profile].cluster.gpu_node_groups}
    for name, group in groups.items():
        assert group["ami_type"] == GPU_AMI_TYPES[configs[name].catalog_entry.architecture]
        assert group["taint"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]
        assert group["node_repair_config"] == {"enabled": True}
        # The profile's size is applied on every deploy: nothing manages a GPU group's size but the profile
        # (and, for a Capacity Block's group, its window: no node outside it, profiles/capacity.py).
        # (A Capacity Block's group carries only a precondition: no plan near its window's edge.)
        assert set(group.get("lifecycle", {})) <= {"precondition"}
        assert "ignore_changes" not in json.dumps(group.get("lifecycle", {}))
        config = configs[name]
        window = block_sizes(
            config.capacity, (config.min_size, config.desired_size, config.max_size), datetime.now(UTC)
        )
        assert group["scaling_config"]["desired_size"] == window[1]
        assert "pre_bootstrap_user_data" not in json.dumps(group)


@pytest.mark.parametrize("profile", SHIPPED)
def test_user_data_is_nodeadm_mime_with_script_and_node_config(synthesized, profile):
    (template,) = gpu_templates(cluster(synthesized, profile)).values()
    message = email.message_from_string(base64.b64decode(template["user_data"]).decode())
    assert message.is_multipart()
    parts = {part.get_content_type(): part.get_payload() for part in message.get_payload()}
    assert set(parts) == {"text/x-shellscript", "application/node.eks.aws"}
    assert parts["text/x-shellscript"].startswith("#!/usr/bin/env bash")
    assert "nr_hugepages" in parts["text/x-shellscript"]
    node_config = yaml.safe_load(parts["application/node.eks.aws"])
    assert node_config["kind"] == "NodeConfig"
    assert node_config["spec"]["instance"]["localStorage"]["strategy"] == "RAID0"
    assert node_config["spec"]["featureGates"] == {"FastImagePull": True}
    # The Lustre client runs LNet over EFA exactly when the profile's file system is EFA-enabled.
    fsx = synthesized.configs[profile].storage.fsx
    over_efa = fsx.enabled and fsx.efa_enabled
    script = parts["text/x-shellscript"]
    assert (f"LUSTRE_OVER_EFA={int(over_efa)}\n" in script) and "lnetctl net add --net efa" in script


@pytest.mark.parametrize("profile", ALL)
def test_placement_follows_capacity(synthesized, profile):
    stack = cluster(synthesized, profile)
    templates = gpu_templates(stack)
    groups = {g.name: g for g in synthesized.configs[profile].cluster.gpu_node_groups}
    placement_groups = resources(stack, "aws_placement_group")
    for name, cfg in groups.items():
        placement = templates[name].get("placement")
        if cfg.placement == "cluster":
            pg_id = by_path(stack, "aws_placement_group", f"gpu-{name}/placement-group")[0]
            assert placement == {"group_name": ref("aws_placement_group", pg_id, "name")}
            assert placement_groups[pg_id]["strategy"] == "cluster"
        elif cfg.placement == "reservation":
            assert placement == {"group_name": cfg.existing_placement_group}
        else:
            assert placement is None


def test_capacity_block_has_all_three_settings_and_no_forced_placement(synthesized):
    stack = cluster(synthesized, "capacity-block")
    (group,) = gpu_node_groups(stack).values()
    (template,) = gpu_templates(stack).values()
    assert group["capacity_type"] == "CAPACITY_BLOCK"
    assert template["instance_market_options"] == {"market_type": "capacity-block"}
    assert template["capacity_reservation_specification"] == {
        "capacity_reservation_target": {"capacity_reservation_id": "cr-0123456789abcdef0"}
    }
    assert "placement" not in template and not resources(stack, "aws_placement_group")
    assert group["scaling_config"]["max_size"] <= 2

    # The fixture's block (2099-02-27T11:30Z to 2099-03-01T11:30Z) has not started: the group holds
    # no node until a scheduled action scales it up at the start, and a second one takes it to zero
    # 60 minutes (the default drain) before the end; EC2 terminates from 30 minutes before it.
    assert (group["scaling_config"]["min_size"], group["scaling_config"]["desired_size"]) == (0, 0)
    found = {body["scheduled_action_name"]: body for body in resources(stack, "aws_autoscaling_schedule").values()}
    up, drain = found["p5-block-scale-up-when-block-starts"], found["p5-block-drain-before-block-ends"]
    assert (up["start_time"], up["desired_capacity"], up["max_size"]) == ("2099-02-27T11:30:00Z", 2, 2)
    assert drain["start_time"] == "2099-03-01T10:30:00Z"
    assert (drain["min_size"], drain["max_size"], drain["desired_capacity"]) == (0, 0, 0)
    node_group_id = next(k for k, body in resources(stack, "aws_eks_node_group").items() if body is group)
    for schedule in (up, drain):
        assert schedule["autoscaling_group_name"] == (
            f"${{aws_eks_node_group.{node_group_id}.resources[0].autoscaling_groups[0].name}}"
        )
    # Groups on other capacity have no such schedule.
    assert not resources(cluster(synthesized, "odcr"), "aws_autoscaling_schedule")


def test_odcr_targets_reservation_or_group_on_demand(synthesized):
    stack = cluster(synthesized, "odcr")
    groups, templates = gpu_node_groups(stack), gpu_templates(stack)
    assert groups["p5en-odcr"]["capacity_type"] == "ON_DEMAND"
    assert templates["p5en-odcr"]["capacity_reservation_specification"]["capacity_reservation_target"] == {
        "capacity_reservation_resource_group_arn": (
            "arn:aws:resource-groups:us-west-2:123456789012:group/p5en-reservations"
        )
    }
    assert templates["b300-odcr"]["capacity_reservation_specification"]["capacity_reservation_target"] == {
        "capacity_reservation_id": "cr-0fedcba9876543210"
    }
    assert "instance_market_options" not in templates["p5en-odcr"]
    # A group without EFA puts the node and nothing else on its primary interface.
    assert "network_interfaces" not in templates["g6-no-efa"]
    assert len(templates["g6-no-efa"]["vpc_security_group_ids"]) == 1


@pytest.mark.parametrize("profile", ALL)
def test_plan_time_catalog_check(synthesized, profile):
    stack = cluster(synthesized, profile)
    for name, template in gpu_templates(stack).items():
        cfg = next(g for g in synthesized.configs[profile].cluster.gpu_node_groups if g.name == name)
        condition, offered = template["lifecycle"]["precondition"]
        data_id, data = by_path(stack, "aws_ec2_instance_type", f"gpu-{name}/instance-type", section="data")
        assert data["instance_type"] == cfg.instance_type
        entry, data_ref = CATALOG[cfg.instance_type], f"data.aws_ec2_instance_type.{data_id}"
        if entry.max_efa_interfaces is None:
            # AWS documents the EFA cards, not EC2's maximum (P6e-GB200): at least those, on its cards.
            expected = (
                f"${{coalesce({data_ref}.efa_maximum_interfaces, 0) >= {entry.efa_interfaces} && "
                f"{data_ref}.maximum_network_cards == {entry.network_cards}}}"
            )
        else:
            expected = f"${{coalesce({data_ref}.efa_maximum_interfaces, 0) == {entry.max_efa_interfaces}}}"
        assert condition["condition"] == expected
        assert cfg.instance_type in condition["error_message"]
        # And EC2 offers the type in the group's zone (tests/test_plan_checks.py plans both).
        zone_id, zone = by_path(stack, "aws_ec2_instance_type_offerings", f"gpu-{name}/offered-in-zone", section="data")
        assert {f["name"]: f["values"] for f in zone["filter"]} == {
            "instance-type": [cfg.instance_type],
            "location": [synthesized.configs[profile].cluster.vpc.gpu_node_zone],  # a Local Zone if set
        }
        assert offered["condition"] == (
            f'${{contains(data.aws_ec2_instance_type_offerings.{zone_id}.instance_types, "{cfg.instance_type}")}}'
        )


@pytest.mark.parametrize("profile", ALL)
def test_network_and_identity_addons_exist_before_nodes(synthesized, profile):
    stack = cluster(synthesized, profile)
    addons = {body["addon_name"]: key for key, body in resources(stack, "aws_eks_addon").items()}
    assert set(addons) == {
        "vpc-cni",
        "kube-proxy",
        "eks-pod-identity-agent",
        "coredns",
        "aws-ebs-csi-driver",
        "aws-fsx-csi-driver",
        "aws-mountpoint-s3-csi-driver",
        # GPU profiles: GPU faults become node conditions (tests/test_gpu_faults.py)
        *(["eks-node-monitoring-agent"] if synthesized.configs[profile].cluster.gpu_node_groups else []),
    }
    for group in resources(stack, "aws_eks_node_group").values():
        for early in ("vpc-cni", "eks-pod-identity-agent"):
            assert f"aws_eks_addon.{addons[early]}" in group["depends_on"]
        # Node role policies are destroyed only after the nodes are gone.
        assert sum(dep.startswith("aws_iam_role_policy_attachment.node-role") for dep in group["depends_on"]) == 4


@pytest.mark.parametrize("profile", SHIPPED)
def test_csi_addons_use_pod_identity_and_tolerate_all_taints(synthesized, profile):
    stack = cluster(synthesized, profile)
    for body in resources(stack, "aws_eks_addon").values():
        if not body["addon_name"].startswith("aws-"):
            continue
        assert json.loads(body["configuration_values"]) == {"node": {"tolerateAllTaints": True}}
        (association,) = body["pod_identity_association"]
        _, _, role = target(stack, association["role_arn"])
        trust = json.loads(role["assume_role_policy"])["Statement"][0]
        assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
        assert sorted(trust["Action"]) == ["sts:AssumeRole", "sts:TagSession"]


def test_mountpoint_role_is_limited_to_platform_buckets(synthesized):
    stack = cluster(synthesized, "gpu-validation")
    policy = json.loads(by_path(stack, "aws_iam_role_policy", "s3-csi-role/inline")[1]["policy"])
    resources_ = {
        r for s in policy["Statement"] for r in ([s["Resource"]] if isinstance(s["Resource"], str) else s["Resource"])
    }
    # Exactly the storage layer's two data buckets (named <platform>-<purpose>-<account>), never a
    # prefix pattern that would also match the build layer's bucket or another platform's.
    account = "${data.aws_caller_identity.eks_caller_6E48637E.account_id}"
    buckets = {f"arn:aws:s3:::gpu-validation-{purpose}-{account}" for purpose in ("datasets", "checkpoints")}
    assert resources_ == buckets | {f"{bucket}/*" for bucket in buckets}
    assert not any("*" in r.replace("/*", "") for r in resources_)


@pytest.mark.parametrize("profile, public", [("jark", True), ("gpu-validation", False), ("s3-state", False)])
def test_control_plane_endpoint_encryption_and_access(synthesized, profile, public):
    stack = cluster(synthesized, profile)
    (eks,) = resources(stack, "aws_eks_cluster").values()
    vpc_config = eks["vpc_config"]
    assert vpc_config["endpoint_private_access"] is True
    assert vpc_config["endpoint_public_access"] is public
    assert vpc_config.get("public_access_cidrs") == (["198.51.100.0/24", "203.0.113.0/24"] if public else None)
    assert eks["access_config"] == {"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": False}
    assert eks["encryption_config"]["resources"] == ["secrets"]
    (key,) = resources(stack, "aws_kms_key").values()
    assert key["enable_key_rotation"] is True
    assert eks["version"] == synthesized.configs[profile].cluster.kubernetes_version


def test_access_entries_for_deployer_and_admins(synthesized):
    entries = resources(cluster(synthesized, "odcr"), "aws_eks_access_entry")
    principals = sorted(body["principal_arn"] for body in entries.values())
    assert len(principals) == 2
    assert "arn:aws:iam::123456789012:role/platform-admins" in principals
    assert any("aws_iam_session_context" in p and p.endswith(".issuer_arn}") for p in principals)
    # Whoever applies later (CI, a teammate) does not move the first deployer's admin to itself:
    # Terraform ignores the principal's change on the deployer's entry and association only.
    stack = cluster(synthesized, "odcr")
    for kind in ("aws_eks_access_entry", "aws_eks_access_policy_association"):
        for body in resources(stack, kind).values():
            deployer = "/eks/deployer-" in path_of(body)
            assert body.get("lifecycle", {}).get("ignore_changes") == (["principal_arn"] if deployer else None)
    # A listed admin who is the deployer would be a second entry for one principal, which EKS
    # refuses (tests/test_plan_checks.py plans it).
    (admin,) = [b for b in resources(stack, "aws_eks_access_entry").values() if "/eks/admin-" in path_of(b)]
    assert "platform-admins" in admin["lifecycle"]["precondition"][0]["error_message"]


@pytest.mark.parametrize("profile, nats, endpoints", [("gpu-validation", 1, 0), ("p5-training", 3, 6)])
def test_network_shape(synthesized, profile, nats, endpoints):
    stack = cluster(synthesized, profile)
    assert len(resources(stack, "aws_nat_gateway")) == nats
    interface = [e for e in resources(stack, "aws_vpc_endpoint").values() if e["vpc_endpoint_type"] == "Interface"]
    gateway = [e for e in resources(stack, "aws_vpc_endpoint").values() if e["vpc_endpoint_type"] == "Gateway"]
    assert len(interface) == endpoints and len(gateway) == 1 and gateway[0]["service_name"].endswith(".s3")
    publics = [s for s in resources(stack, "aws_subnet").values() if s["tags"].get("kubernetes.io/role/elb") == "1"]
    privates = [s for s in resources(stack, "aws_subnet").values() if s["tags"].get("karpenter.sh/discovery")]
    assert len(publics) == len(privates) == len(synthesized.configs[profile].cluster.vpc.availability_zones) >= 2


@pytest.mark.parametrize("profile", [p for p in (*SHIPPED, *FIXTURES) if p in ("gpu-validation", "capacity-block")])
def test_subnets_and_the_offering_check_use_the_zones_as_the_profile_names_them(synthesized, profile):
    """Zone IDs place subnets by availability_zone_id (the same physical zone in every account) and
    ask EC2 for offerings by zone ID; zone names keep availability_zone and name offerings by name."""
    stack = cluster(synthesized, profile)
    vpc = synthesized.configs[profile].cluster.vpc
    key, other = (
        ("availability_zone_id", "availability_zone") if vpc.zone_ids else ("availability_zone", "availability_zone_id")
    )
    subnets = resources(stack, "aws_subnet").values()
    assert sorted(s[key] for s in subnets) == sorted(vpc.availability_zones * 2)
    assert not any(other in s for s in subnets)
    offerings = resources(stack, "aws_ec2_instance_type_offerings", section="data").values()
    assert offerings and {o["location_type"] for o in offerings} == {
        "availability-zone-id" if vpc.zone_ids else "availability-zone"
    }
    in_zone = [o for o in offerings if any(f["name"] == "location" for f in o["filter"])]
    assert in_zone and all(f["values"] == [vpc.gpu_az] for o in in_zone for f in o["filter"] if f["name"] == "location")


def test_outputs_for_later_layers(synthesized):
    outputs = cluster(synthesized, "gpu-validation")["output"]
    for name in (
        "cluster_name",
        "endpoint",
        "certificate_authority",
        "node_security_group_id",
        "efa_security_group_id",
        "private_subnet_ids",
        "gpu_subnet_id",
        "node_role_arn",
        "kms_key_arn",
    ):
        assert name in outputs
    assert outputs["configure_kubectl"]["value"] == "aws eks update-kubeconfig --region us-west-2 --name gpu-validation"


@pytest.mark.parametrize("profile", SHIPPED)
def test_every_managed_addon_is_pinned_and_mountpoint_meets_its_floor(synthesized, profile):
    stack = cluster(synthesized, profile)
    defaults = resources(stack, "aws_eks_addon_version", section="data")
    addons = resources(stack, "aws_eks_addon").values()
    assert len(addons) == 7 + bool(synthesized.configs[profile].cluster.gpu_node_groups)
    for addon in addons:
        assert addon["addon_version"].startswith("${data.aws_eks_addon_version."), addon["addon_name"]
    for default in defaults.values():
        assert default["kubernetes_version"] == synthesized.configs[profile].cluster.kubernetes_version
        assert default["most_recent"] is False
    (mountpoint,) = [a for a in addons if a["addon_name"] == "aws-mountpoint-s3-csi-driver"]
    (check,) = mountpoint["lifecycle"]["precondition"]
    assert ">= 2008000}" in check["condition"] and "cluster.addon_versions" in check["error_message"]


def test_a_pinned_addon_version_is_used_as_is(synthesized):
    from profiles import validate_profile
    from tests.test_profiles import mutated

    config = validate_profile(mutated(cluster__addon_versions={"aws-mountpoint-s3-csi-driver": "v2.9.1-eksbuild.2"}))
    assert config.cluster.addon_versions == {"aws-mountpoint-s3-csi-driver": "v2.9.1-eksbuild.2"}


@pytest.mark.parametrize("profile", ALL)
def test_every_managed_group_runs_the_pinned_ami_release_or_the_newest(synthesized, profile):
    pinned = synthesized.configs[profile].cluster.ami_release_version
    groups = resources(cluster(synthesized, profile), "aws_eks_node_group").values()
    assert {group.get("release_version") for group in groups} == {pinned}
    # Every group names the cluster's Kubernetes minor, pinned or not: a control-plane minor bump
    # moves the groups too (EKS refuses a new minor's release sent without the version).
    version = synthesized.configs[profile].cluster.kubernetes_version
    assert {group.get("version") for group in groups} == {version}
    # The shipped profiles pin one release (same driver after a repair); the fixtures stay unpinned,
    # but for the one that pins its own.
    assert (pinned is not None) is (profile in SHIPPED or profile == "odcr")


def test_a_capacity_block_past_its_drain_warns_and_schedules_nothing_new(tmp_path):
    """AWS deletes a scheduled action once it has run and refuses one in the past: a profile whose
    block is draining or over still loads (destroy and pause must work), synthesizes without the
    action, and says why."""
    import copy
    from datetime import UTC, datetime

    from profiles import validate_profile
    from profiles.loader import parse_profile_text
    from stacks.platform import capacity_block_warnings, synthesize
    from tests.cases import FIXTURE_PROFILES

    doc = parse_profile_text((FIXTURE_PROFILES / "capacity-block.yaml").read_bytes(), "capacity-block")
    past = copy.deepcopy(doc)
    past["cluster"]["gpu_node_groups"][0]["capacity"]["starts_at"] = "2019-12-30T00:00:00Z"
    past["cluster"]["gpu_node_groups"][0]["capacity"]["ends_at"] = "2020-01-01T00:00:00Z"
    config = validate_profile(past)
    (warning,) = capacity_block_warnings(config, datetime.now(UTC))
    assert "p5-block's Capacity Block ends at 2020-01-01 00:00 UTC" in warning and "stays at 0 nodes" in warning
    assert capacity_block_warnings(validate_profile(doc), datetime.now(UTC)) == []
    synthesize(config, str(tmp_path / "out"), state_dir=tmp_path / "state")
    stack = json.loads((tmp_path / "out" / "stacks" / "cluster" / "cdk.tf.json").read_text())
    assert not resources(stack, "aws_autoscaling_schedule")
    (group,) = gpu_node_groups(stack).values()  # the group itself stays until the profile changes, at 0
    assert group["scaling_config"]["desired_size"] == 0


def endpoint_allows(policy: dict, *, principal_account: str | None, action: str = "ec2:DescribeInstances") -> bool:
    """IAM's evaluation of an endpoint policy of Allow statements with StringEquals conditions
    (IAM User Guide, condition operators: a condition key absent from the request makes
    StringEquals false, so an anonymous request, which has no aws:PrincipalAccount, matches no
    such statement; a statement applies only to its actions)."""
    context = {"aws:PrincipalAccount": principal_account} if principal_account else {}
    for statement in policy["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        conditions = statement.get("Condition", {}).get("StringEquals", {})
        if (
            statement["Effect"] == "Allow"
            and ("*" in actions or action in actions)
            and all(context.get(key) == value for key, value in conditions.items())
        ):
            return True
    return False


@pytest.mark.parametrize("profile", ["p5-training", "p5en-training"])
def test_interface_endpoints_admit_only_the_platforms_own_account(synthesized, profile):
    """A credential of another account (found on a node or in a pod) cannot use the VPC's private
    path to its own account's APIs; the S3 gateway endpoint stays open, because S3 is also where
    AWS's own and third parties' content comes from (ECR's layer bucket through presigned URLs of
    ECR's account, the AL2023 package repositories anonymously, registries that serve layers from
    S3 in the same region), which a principal or bucket list would cut off."""
    stack = cluster(synthesized, profile)
    (caller,) = resources(stack, "aws_caller_identity", section="data")
    account = ref("data.aws_caller_identity", caller, "account_id").replace("${data.data.", "${data.")
    endpoints = resources(stack, "aws_vpc_endpoint").values()
    for endpoint in (e for e in endpoints if e["vpc_endpoint_type"] == "Interface"):
        if endpoint["service_name"].endswith(".eks-auth"):
            # EKS documents endpoint policies for `eks` only; eks-auth keeps the full-access default.
            assert "policy" not in endpoint
            continue
        policy = json.loads(endpoint["policy"])
        statement = policy["Statement"][0]
        assert statement["Condition"] == {"StringEquals": {"aws:PrincipalAccount": account}}, endpoint["service_name"]
        own = json.loads(endpoint["policy"].replace(account, "123456789012"))
        assert endpoint_allows(own, principal_account="123456789012")
        assert not endpoint_allows(own, principal_account="999999999999")
        assert not endpoint_allows(own, principal_account=None)  # anonymous: no condition key, no match
        if endpoint["service_name"].endswith(".sts"):
            # Web identity and SAML sign-ins are unsigned: allowed by action, trusted by the role.
            assert endpoint_allows(own, principal_account=None, action="sts:AssumeRoleWithWebIdentity")
            assert not endpoint_allows(own, principal_account="999999999999", action="sts:AssumeRole")
        else:
            assert len(policy["Statement"]) == 1
    (gateway,) = [e for e in endpoints if e["vpc_endpoint_type"] == "Gateway"]
    assert "policy" not in gateway
