"""One TerraformStack per layer, and `build_platform`, which wires them in deploy order.

Importing a layer module loads the provider bindings (seconds): do it once per process. This
package module itself loads nothing, so `LAYERS` is cheap to import (operate/ uses it).
"""

# Deploy order; destroy runs it backwards.
LAYERS = ("cluster", "storage", "build", "addons", "workloads")
# The Kubernetes layers' providers, and kubectl in operate/, may reach a private API endpoint
# through a local forward (an SSM port forward or an SSH tunnel), named by TF_VAR_api_tunnel: the
# connection goes to the forward, TLS is still checked against the endpoint's name and the
# cluster's CA, so a forward to any other server fails the handshake (docs/operations.md).
API_TUNNEL_VARIABLE = "api_tunnel"
API_TUNNEL_PATTERN = r"^https://(localhost|127\.0\.0\.1):[0-9]{1,5}$"
# Layers that use only the AWS provider: they plan without reaching the cluster's API.
AWS_ONLY_LAYERS = ("cluster", "storage", "build")
