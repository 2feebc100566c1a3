"""Label and tag keys a profile may not set: the ones Kubernetes, AWS and the platform own.

Node labels (cluster.gpu_node_groups[].labels):
- Kubernetes reserves the kubernetes.io/ and k8s.io/ prefixes and every subdomain of them
  (node.kubernetes.io/, node-role.kubernetes.io/, resource.k8s.io/) for its own components
  ("Well-Known Labels, Annotations and Taints", https://kubernetes.io/docs/reference/labels-annotations-taints/;
  "Labels and Selectors", https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set);
  the kubelet's NodeRestriction admission refuses most of them on a node.
- The platform's own labels (`role`, `platform/...`; components/labels.py) are what notebooks,
  queues and checks select GPU nodes by.

Tags (the profile's `tags`, every AWS provider's default tags):
- AWS reserves the aws: prefix (any case), https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html.
- The platform's own default tags (platform_tags) and the keys it sets on resources itself: Name,
  and the discovery tags Kubernetes controllers read (karpenter.sh/discovery, kubernetes.io/...):
  a default tag of that key on every resource would overwrite or mislead them. Compared without
  regard to case: IAM takes the tag keys of users and roles case-insensitively ("you cannot have
  separate Department and department tag keys"; the later one replaces the first,
  https://docs.aws.amazon.com/IAM/latest/UserGuide/id_tags.html#case-sensitivity), and every
  layer's default tags reach its IAM roles, so `Platform` would replace the platform's `platform`.
"""

from __future__ import annotations

from pydantic import AfterValidator

PLATFORM_LABEL_KEYS = ("role",)
PLATFORM_LABEL_PREFIX = "platform/"
KUBERNETES_DOMAINS = ("kubernetes.io", "k8s.io")


def platform_tags(name: str, layer: str) -> dict[str, str]:
    """The default tags every layer's AWS provider sets before the profile's own."""
    return {"platform": name, "layer": layer}


PLATFORM_TAG_KEYS = (*platform_tags("", ""), "Name", "karpenter.sh/discovery")
RESERVED_TAG_PREFIXES = ("aws:", "kubernetes.io/", "karpenter.sh/", "eks:")


def _kubernetes_prefix(key: str) -> str | None:
    prefix, slash, _ = key.rpartition("/")
    if not slash:
        return None
    for domain in KUBERNETES_DOMAINS:
        if prefix == domain or prefix.endswith(f".{domain}"):
            return prefix
    return None


def _node_labels(labels: dict[str, str]) -> dict[str, str]:
    for key in labels:
        if key in PLATFORM_LABEL_KEYS or key.startswith(PLATFORM_LABEL_PREFIX):
            raise ValueError(
                f"{key!r} is a label the platform sets on every GPU node (notebooks, queues and checks select "
                "on it); choose another key"
            )
        if (prefix := _kubernetes_prefix(key)) is not None:
            raise ValueError(
                f"{key!r} is in {prefix}/, a prefix Kubernetes reserves (kubernetes.io/, k8s.io/ and their "
                "subdomains); use a prefix of your own, e.g. example.com/team"
            )
    return labels


def _tag_key(key: str) -> str:
    own = next((platform for platform in PLATFORM_TAG_KEYS if platform.casefold() == key.casefold()), None)
    if own == key:
        raise ValueError(f"tag key {key!r} is one the platform sets itself ({', '.join(PLATFORM_TAG_KEYS)})")
    if own is not None:
        raise ValueError(
            f"tag key {key!r} is {own!r}, one the platform sets itself, in other letter case: IAM takes a role's tag "
            f"keys without regard to case, so it would replace the platform's {own!r} "
            f"(the platform's keys: {', '.join(PLATFORM_TAG_KEYS)})"
        )
    if (prefix := next((p for p in RESERVED_TAG_PREFIXES if key.lower().startswith(p)), None)) is not None:
        raise ValueError(
            f"tag key {key!r}: the {prefix} prefix is reserved ({', '.join(RESERVED_TAG_PREFIXES)}: AWS's own, "
            "and the discovery tags Kubernetes controllers read)"
        )
    return key


NodeLabels = AfterValidator(_node_labels)
ReservedTagKeys = AfterValidator(_tag_key)
