"""One TerraformStack per layer, and `build_platform`, which wires them in deploy order.

Importing a layer module loads the provider bindings (seconds): do it once per process. This
package module itself loads nothing, so `LAYERS` is cheap to import (operate/ uses it).
"""

# Deploy order; destroy runs it backwards.
LAYERS = ("cluster", "storage", "build", "addons", "workloads")
# Layers that use only the AWS provider: they plan without reaching the cluster's API.
AWS_ONLY_LAYERS = ("cluster", "storage", "build")
