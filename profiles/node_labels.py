"""The syntax of a GPU node group's extra Kubernetes labels, as EKS takes them on a managed node group.

- Kubernetes ("Labels and Selectors", Syntax and character set,
  https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set):
  a key is an optional prefix, a DNS subdomain (dot-separated parts of lowercase letters, digits and
  inner hyphens, at most 253 characters) and '/', then a name of at most 63 characters matching
  `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`; a value is empty or 63 characters at most of the name's form.
- EKS (CreateNodegroup / UpdateLabelsPayload, https://docs.aws.amazon.com/eks/latest/APIReference/API_UpdateLabelsPayload.html):
  a label key of 1 to 63 characters, prefix included, and a value of 1 to 63: EKS refuses an empty
  value Kubernetes itself would take (its error quotes the Kubernetes value pattern,
  https://github.com/aws-controllers-k8s/community/issues/2208).
- The prefixes EKS and Kubernetes keep for themselves are refused in profiles/reserved_keys.py.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

EKS_MAX_LABEL_KEY = 63
EKS_MAX_LABEL_VALUE = 63
_DNS_PART = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_SUBDOMAIN = re.compile(rf"{_DNS_PART}(\.{_DNS_PART})*")
LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
NAME_WORDS = "letters, digits, '-', '_' and '.', starting and ending with a letter or digit"


def _label_key(key: str) -> str:
    if not 1 <= len(key) <= EKS_MAX_LABEL_KEY:
        raise ValueError(
            f"a node label key of {len(key)} characters; EKS takes 1 to {EKS_MAX_LABEL_KEY}, prefix and name "
            "together (e.g. example.com/team)"
        )
    prefix, slash, name = key.rpartition("/")
    if slash and not DNS_SUBDOMAIN.fullmatch(prefix):
        raise ValueError(
            f"not a Kubernetes label key: its prefix {prefix!r} is not a DNS subdomain (dot-separated parts of "
            "lowercase letters, digits and inner hyphens, e.g. example.com, then one '/')"
        )
    if not LABEL_NAME.fullmatch(name):
        raise ValueError(f"not a Kubernetes label key: its name {name!r} (after any prefix/) must be {NAME_WORDS}")
    return key


def _label_value(value: str) -> str:
    if not 1 <= len(value) <= EKS_MAX_LABEL_VALUE:
        raise ValueError(
            f"a node label value of {len(value)} characters; EKS takes 1 to {EKS_MAX_LABEL_VALUE} (an empty value "
            "too is refused by EKS)"
        )
    if not LABEL_NAME.fullmatch(value):
        raise ValueError(f"not a Kubernetes label value: {NAME_WORDS}")
    return value


LabelKey = Annotated[str, AfterValidator(_label_key)]
LabelValue = Annotated[str, AfterValidator(_label_value)]
