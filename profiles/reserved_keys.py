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
- Labels other components on the GPU nodes set or read, which a node group's own value would
  overwrite, be overwritten by, or steer:
  - Karpenter reserves karpenter.sh and its subdomains (RestrictedLabelDomains,
    kubernetes-sigs/karpenter pkg/apis/v1/labels.go, v1.x), and the AWS provider adds
    karpenter.k8s.aws (aws/karpenter-provider-aws pkg/apis/v1/labels.go); its IsRestrictedLabel
    takes the domain and every subdomain of it.
  - EKS and its node agents set topology.k8s.aws/ (zone-id, network-node-layer-N; "Well-known
    labels" of EKS, https://docs.aws.amazon.com/eks/latest/userguide/ and the VPC CNI), so the
    whole k8s.aws domain is AWS's, like eks.amazonaws.com.
  - NVIDIA's GPU Operator (v26.7.0) sets nvidia.com/gpu.present on GPU nodes and reads
    nvidia.com/gpu.deploy.<operand> to decide which operands run on a node; its GPU Feature
    Discovery sets nvidia.com/gpu.* (product, count, memory), nvidia.com/cuda.* and
    nvidia.com/mig.* (strategy, capable), and its upgrade controller nvidia.com/gpu-driver-upgrade-state
    (https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-mig.html,
    gpu-feature-discovery's README). nvidia.com/mig.config stays allowed: it is the operator's
    input for the MIG layout an administrator chooses.

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

from profiles.base import FieldProblem, raise_all

PLATFORM_LABEL_KEYS = ("role",)
PLATFORM_LABEL_PREFIX = "platform/"
RESERVED_LABEL_DOMAINS = ("kubernetes.io", "k8s.io", "eks.amazonaws.com")


def platform_tags(name: str, layer: str) -> dict[str, str]:
    """The default tags every layer's AWS provider sets before the profile's own."""
    return {"platform": name, "layer": layer}


PLATFORM_TAG_KEYS = (*platform_tags("", ""), "Name", "karpenter.sh/discovery")
RESERVED_TAG_PREFIXES = ("aws:", "kubernetes.io/", "karpenter.sh/", "eks:")


# Domains (with every subdomain) whose labels another component on the node sets or reads, -> whose.
OWNED_LABEL_DOMAINS = {"karpenter.sh": "Karpenter's", "k8s.aws": "AWS's (karpenter.k8s.aws, topology.k8s.aws)"}
# nvidia.com/ label names the GPU Operator and GPU Feature Discovery set or read (the name's start).
NVIDIA_OWNED_NAMES = ("gpu.", "gpu-driver-upgrade", "cuda.", "mig.")
NVIDIA_ALLOWED_NAMES = ("mig.config",)
OWN_PREFIX = "use a prefix of your own, e.g. example.com/team"


def _reserved_prefix(key: str) -> str | None:
    prefix, slash, _ = key.rpartition("/")
    return prefix if slash and prefix.endswith(RESERVED_LABEL_DOMAINS) else None


def _owner(key: str) -> str | None:
    """Whose label `key` is, when a component on the GPU nodes sets or reads it."""
    prefix, slash, name = key.rpartition("/")
    if not slash:
        return None
    for domain, owner in OWNED_LABEL_DOMAINS.items():
        if prefix == domain or prefix.endswith("." + domain):
            return f"in {prefix}/, {owner} labels"
    if prefix == "nvidia.com" and name.startswith(NVIDIA_OWNED_NAMES) and name not in NVIDIA_ALLOWED_NAMES:
        return (
            "a label NVIDIA's GPU Operator or GPU Feature Discovery sets or reads on GPU nodes "
            f"(nvidia.com/{', nvidia.com/'.join(NVIDIA_OWNED_NAMES)}...)"
        )
    return None


def _node_labels(labels: dict[str, str]) -> dict[str, str]:
    problems = []
    for key in labels:
        if key in PLATFORM_LABEL_KEYS or key.startswith(PLATFORM_LABEL_PREFIX):
            message = (
                f"{key!r} is a label the platform sets on every GPU node (notebooks, queues and checks select on it)"
            )
            problems.append(FieldProblem((key,), key, message, allowed="another key, e.g. example.com/team"))
        elif (prefix := _reserved_prefix(key)) is not None:
            message = (
                f"{key!r} is in {prefix}/, a prefix EKS refuses on a node group's labels (any prefix ending in "
                f"{', '.join(RESERVED_LABEL_DOMAINS)}: Kubernetes' and EKS's own)"
            )
            problems.append(FieldProblem((key,), key, message, allowed=OWN_PREFIX))
        elif (owner := _owner(key)) is not None:
            message = f"{key!r} is {owner}, set or read by that component: a node group's value would clash with it"
            problems.append(FieldProblem((key,), key, message, allowed=OWN_PREFIX))
    raise_all(problems, title="labels")
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
