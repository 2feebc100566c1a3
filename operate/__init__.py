"""Operate the platform: plan, deploy or destroy layers in dependency order with plain Terraform
on the synthesized JSON (the same working directories `cdktf deploy` uses)."""
