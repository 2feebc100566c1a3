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


# Entries read from AWS's documentation because the recorded data lacks the type (documented_at).
RECORDED = sorted(name for name, entry in CATALOG.items() if not entry.documented_at)
DOCUMENTED = sorted(name for name, entry in CATALOG.items() if entry.documented_at)


@pytest.mark.parametrize("name", RECORDED)
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


@pytest.mark.parametrize("name", DOCUMENTED)
def test_an_entry_read_from_the_documentation_is_one_the_recorded_data_lacks(name):
    """Once moto's recording has the type, its DescribeInstanceTypes numbers must be compared with the
    documentation's reading (move the entry to RECORDED): this fails then, rather than never checking."""
    assert name not in EC2
    assert all(url.startswith("https://docs.aws.amazon.com/") for url in CATALOG[name].documented_at)


def test_p6e_gb200_is_the_documentation_s_reading():
    """docs/gb200.md: EC2 Instance Types (ac.html), the EC2 EFA guide's P6e-GB200 section and the EKS
    UltraServer page."""
    entry = CATALOG["p6e-gb200.36xlarge"]
    assert (entry.vcpus, entry.memory_gib, entry.gpu_count, entry.gpu_model, entry.gpu_memory_gib) == (
        144,
        960,
        4,
        "B200",
        185,
    )
    assert (entry.network_cards, entry.network_gbps, entry.efa_bandwidth_gbps) == (17, 3200, 1600)
    assert (entry.local_nvme_disks, entry.local_nvme_disk_gb, entry.architecture) == (3, 7500, "arm64")
    # One EFA-only interface per GPU's pair of cards ([1, 3], [5, 7], [9, 11], [13, 15]); card 0 ENA only.
    assert entry.max_efa_interfaces is None and entry.efa_network_cards == (1, 5, 9, 13)
    assert entry.ultraserver_sizes == {"u-p6e-gb200x36": 9, "u-p6e-gb200x72": 18}
