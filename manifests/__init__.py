"""Validation workloads rendered from a profile (so device counts always match the catalog),
and the post-deploy acceptance gate that runs them."""
