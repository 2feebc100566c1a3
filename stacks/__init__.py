"""One TerraformStack per layer, and `build_platform`, which wires them in deploy order.

Importing this package loads the provider bindings (several seconds): do it once per process.
"""
