"""Whether `terraform init` failed for the network (no provider registry or mirror answered) or for
the configuration: `validate` reports the first as "not checked", never as INVALID."""

from __future__ import annotations

# Terraform's diagnostics when `init` could not download a provider (Terraform 1.10 and 1.11), and
# what their detail says when no registry answered: DNS, TCP, TLS or HTTP failures on the way to
# registry.terraform.io or the provider's download.
PROVIDER_DOWNLOAD_FAILED = ("Failed to query available provider packages", "Failed to install provider")
REGISTRY_UNREACHABLE = (
    "could not connect to",
    "failed to request discovery document",
    "could not query provider registry",
    "dial tcp",
    "connection refused",
    "no such host",
    "i/o timeout",
    "TLS handshake timeout",
    "Client.Timeout exceeded",
    "context deadline exceeded",
    # A registry or network mirror that answers with an error status (a 5xx, 429 Too Many Requests):
    # Terraform retries, then gives up with these words (terraform internal/getproviders).
    "please try again later",
    "failed to query provider mirror",
    "unsuccessful request to",
    # A filesystem mirror (TF_CLI_CONFIG_FILE) that lacks a provider: nothing of the configuration is known.
    "was not found in any of the search locations",
)


def registry_unreachable(init_output: str) -> bool:
    """Did `terraform init` fail because no provider registry answered (not for the configuration)?
    Terraform wraps its diagnostics at the terminal's width: whitespace is not compared."""
    said = " ".join(init_output.split())
    if "including problems with the configuration" in said:  # it found errors in the configuration too
        return False
    return any(failed in said for failed in PROVIDER_DOWNLOAD_FAILED) and any(
        marker in said for marker in REGISTRY_UNREACHABLE
    )
