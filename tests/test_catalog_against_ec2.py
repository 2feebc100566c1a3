"""The GPU catalog against EC2's own DescribeInstanceTypes data, as recorded in moto's package.

An independent source for the facts the launch template is built from; the plan-time
precondition checks the same numbers against the live API."""

from __future__ import annotations

import gzip
import json
from importlib.util import find_spec
from pathlib import Path

import pytest

from profiles.catalog import CATALOG

# Found without importing moto (a second and a half of every test process's collection): the
# data file sits in moto's package folder.
(_MOTO,) = find_spec("moto").submodule_search_locations  # type: ignore[union-attr]
EC2 = json.loads(gzip.decompress((Path(_MOTO) / "ec2" / "resources" / "instance_types.json.gz").read_bytes()))


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_catalog_entry_matches_ec2(name):
    entry, ec2 = CATALOG[name], EC2[name]
    network, (gpu,) = ec2["NetworkInfo"], ec2["GpuInfo"]["Gpus"]
    assert entry.max_efa_interfaces == network.get("EfaInfo", {}).get("MaximumEfaInterfaces", 0)
    assert entry.network_cards == network["MaximumNetworkCards"]
    assert entry.gpu_count == gpu["Count"]
    assert entry.gpu_model == gpu["Name"]
    assert entry.vcpus == ec2["VCpuInfo"]["DefaultVCpus"]
    assert entry.memory_gib * 1024 == ec2["MemoryInfo"]["SizeInMiB"]
    assert abs(entry.gpu_memory_gib * 1024 - gpu["MemoryInfo"]["SizeInMiB"]) <= 0.1 * entry.gpu_memory_gib * 1024
