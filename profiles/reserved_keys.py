"""Label and tag keys a profile may not set: the ones Kubernetes, AWS and the platform own.

Node labels (cluster.gpu_node_groups[].labels; their syntax is profiles/node_labels.py):
- Kubernetes reserves the kubernetes.io/ and k8s.io/ prefixes and every subdomain of them
  (node.kubernetes.io/, node-role.kubernetes.io/, resource.k8s.io/) for its own components
  ("Well-Known Labels, Annotations and Taints", https://kubernetes.io/docs/reference/labels-annotations-taints/;
  "Labels and Selectors", https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set);
  the kubelet's NodeRestriction admission refuses most of them on a node.
- EKS's managed node groups refuse any label that contains one of these prefixes or eks.amazonaws.com/
  ("Label cannot contain reserved prefixes [kubernetes.io/, k8s.io/, eks.amazonaws.com/]", the
  CreateNodegroup error quoted in https://github.com/eksctl-io/eksctl/issues/4007 and
  https://github.com/kubernetes/cloud-provider-aws/issues/242). A key has one '/', so a key contains
  one of them exactly when its prefix ends in kubernetes.io, k8s.io or eks.amazonaws.com.
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
RESERVED_LABEL_DOMAINS = ("kubernetes.io", "k8s.io", "eks.amazonaws.com")


def platform_tags(name: str, layer: str) -> dict[str, str]:
    """The default tags every layer's AWS provider sets before the profile's own."""
    return {"platform": name, "layer": layer}


PLATFORM_TAG_KEYS = (*platform_tags("", ""), "Name", "karpenter.sh/discovery")
RESERVED_TAG_PREFIXES = ("aws:", "kubernetes.io/", "karpenter.sh/", "eks:")


def _reserved_prefix(key: str) -> str | None:
    prefix, slash, _ = key.rpartition("/")
    return prefix if slash and prefix.endswith(RESERVED_LABEL_DOMAINS) else None


def _node_labels(labels: dict[str, str]) -> dict[str, str]:
    for key in labels:
        if key in PLATFORM_LABEL_KEYS or key.startswith(PLATFORM_LABEL_PREFIX):
            raise ValueError(
                f"{key!r} is a label the platform sets on every GPU node (notebooks, queues and checks select "
                "on it); choose another key"
            )
        if (prefix := _reserved_prefix(key)) is not None:
            raise ValueError(
                f"{key!r} is in {prefix}/, a prefix EKS refuses on a node group's labels (any prefix ending in "
                f"{', '.join(RESERVED_LABEL_DOMAINS)}: Kubernetes' and EKS's own); use a prefix of your own, "
                "e.g. example.com/team"
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
