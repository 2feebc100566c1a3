"""Record the AWS facts profile validation checks names against, into profiles/aws_facts.json:
regions (with their partition) from botocore's partitions.json, availability zones (name and ID)
from moto's model of EC2, and every EC2 instance type (with its vCPUs) from moto's copy of
DescribeInstanceTypes.
The profile code reads only the recorded file (no botocore or moto at run time);
tests/test_aws_facts.py checks that the file matches the installed packages.

    .venv/bin/python scripts/record_aws_facts.py
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "profiles" / "aws_facts.json"


def collect() -> dict[str, Any]:
    import botocore  # type: ignore[import-untyped]
    import moto
    from moto.ec2.models.availability_zones_and_regions import RegionsAndZonesBackend

    partitions = json.loads(Path(os.path.dirname(botocore.__file__), "data", "partitions.json").read_text())
    zones = {
        region: {zone.name: zone.zone_id for zone in found} for region, found in RegionsAndZonesBackend.zones.items()
    }
    regions = {
        region: {"partition": partition["id"], "zones": zones.get(region, {})}
        for partition in partitions["partitions"]
        for region in partition["regions"]
        if not region.startswith("aws-")
    }  # aws-global and the like name endpoints, not regions
    types = json.loads(gzip.decompress((files("moto.ec2") / "resources" / "instance_types.json.gz").read_bytes()))
    return {
        "source": {
            "botocore": botocore.__version__,
            "moto": moto.__version__,
            "regions": "botocore data/partitions.json",
            "zones": "moto RegionsAndZonesBackend.zones",
            "instance_types": "moto ec2/resources/instance_types.json.gz (EC2 DescribeInstanceTypes): "
            "name -> VCpuInfo.DefaultVCpus",
        },
        "regions": dict(sorted(regions.items())),
        "instance_types": {name: types[name]["VCpuInfo"]["DefaultVCpus"] for name in sorted(types)},
    }


def main() -> int:
    OUT.write_text(json.dumps(collect(), indent=1, sort_keys=False) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
