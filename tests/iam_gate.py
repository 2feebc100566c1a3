"""The IAM gate's rules: what it refuses in a policy statement, a policy document or a stack's
IAM resources (tests/test_iam_gate.py runs it over every profile's synthesized stacks).

Every problem names where it is (the resource, and the statement by index and Sid), then its class
in brackets, then what is wrong: `aws_iam_role_policy.x Statement[2] 'Sid': [action-wildcard] ...`.

The classes, each with the AWS page it rests on where it is defined below:
  negation, action-wildcard, action-case, unscoped, wildcard-condition, absent-key-condition,
  caller-condition, pass-role, s3-scope, destroys-data, grants-permissions, iam-any-account,
  trust-principal, source-account, federated-without-sub, federated-wildcard-sub, federated-other,
  resource-principal, confused-deputy, managed-policy, unreadable-policy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

# resource type -> attributes holding a policy document, and what kind of policy it is. Every
# Terraform route to an identity policy is read, used by the platform or not: a statement the gate
# does not read is one it passes (aws_iam_role's inline_policy blocks are read in `policies`).
POLICY_ATTRIBUTES = {
    "aws_iam_role": {"assume_role_policy": "trust"},
    "aws_iam_role_policy": {"policy": "identity"},
    "aws_iam_policy": {"policy": "identity"},
    "aws_iam_user_policy": {"policy": "identity"},
    "aws_iam_group_policy": {"policy": "identity"},
    "aws_kms_key": {"policy": "resource"},
    "aws_kms_key_policy": {"policy": "resource"},
    "aws_s3_bucket_policy": {"policy": "resource"},
    "aws_sqs_queue_policy": {"policy": "resource"},
    "aws_sns_topic_policy": {"policy": "resource"},
    "aws_ecr_repository_policy": {"policy": "resource"},
    "aws_secretsmanager_secret_policy": {"policy": "resource"},
}
# resource type -> attribute naming the policy ARN(s) it attaches to a role, user or group.
ATTACHMENTS = {
    "aws_iam_role_policy_attachment": "policy_arn",
    "aws_iam_policy_attachment": "policy_arn",
    "aws_iam_user_policy_attachment": "policy_arn",
    "aws_iam_group_policy_attachment": "policy_arn",
    "aws_iam_role": "managed_policy_arns",
    "aws_iam_role_policy_attachments_exclusive": "policy_arns",
}
AWS_MANAGED = "arn:aws:iam::aws:policy/"
# A policy given as the JSON of a data source in the same stack.
DATA_DOCUMENT = re.compile(r"^\$\{data\.aws_iam_policy_document\.([\w-]+)\.(json|minified_json)\}$")
OWN_POLICY_ARN = re.compile(r"^\$\{aws_iam_policy\.([\w-]+)\.arn\}$")

# IAM compares action names case-insensitively ("iam:ListAccessKeys is the same as
# IAM:listaccesskeys"): https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_action.html
# So every rule below matches actions lower-cased, and an action not spelled as AWS spells it is
# refused on its own (class action-case): it reads as something else to a reviewer.
CANONICAL_ACTION = re.compile(r"^[a-z0-9-]+:[A-Z][A-Za-z0-9]*$")
# Actions AWS itself spells in lower case, each with the page that does.
LOWER_CASE_ACTIONS = {
    "rds-db:connect": "https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/UsingWithRDS.IAMDBAuth.IAMPolicy.html",
}
READ_ONLY = re.compile(r"^[a-z0-9-]+:(describe|get|list)[a-z0-9]*$")
# Reads that hand out a secret: never "read-only" for the gate.
SECRET_READS = re.compile(
    r"^(secretsmanager:getsecretvalue|ssm:getparameters?(bypath)?|kms:decrypt|"
    r"ecr:getauthorizationtoken|sts:getfederationtoken|iam:getcredentialreport)$"
)
# Condition keys that only name a region, a time or a transport: they narrow nothing a policy grants.
NON_SCOPING_KEYS = re.compile(
    r"^aws:(RequestedRegion|CurrentTime|EpochTime|SecureTransport|ViaAWSService)$", re.IGNORECASE
)
# Keys that describe only the caller and its session (global condition keys "properties of the
# principal" and "of the role session", https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html).
# In an identity policy the caller is the policy's own role, so such a condition is constant: it
# narrows nothing the statement grants (class caller-condition). In a resource policy they do name
# who is admitted, and count there.
CALLER_KEYS = re.compile(
    r"^aws:(Principal[A-Za-z]*(/.*)?|userid|username|MultiFactorAuth(Present|Age)|TokenIssueTime|UserAgent|"
    r"Referer|SourceIdentity|FederatedProvider|SourceIp|SourceVpce?|VpcSourceIp|CalledVia(First|Last)?|"
    r"AssumedRoot|ChatbotSourceArn|Ec2InstanceSourceVpc|Ec2InstanceSourcePrivateIPv4)$",
    re.IGNORECASE,
)
# Mutating actions AWS documents as taking no resource (or only "*"), each with why it is needed.
RESOURCELESS = {
    "ecr:getauthorizationtoken": "CodeBuild logs in to ECR; the token call has no resource (read-only anyway)",
}
# AWS managed policies the platform attaches, and why each is needed (their text is AWS's).
MANAGED_POLICIES = {
    "AmazonEKSClusterPolicy": "the EKS cluster role",
    "AmazonEKSWorkerNodePolicy": "node roles (managed node groups and Karpenter nodes)",
    "AmazonEKS_CNI_Policy": "node roles: the VPC CNI runs with the node's identity on the host network",
    "AmazonEC2ContainerRegistryReadOnly": "node roles: image pulls from ECR",
    "AmazonSSMManagedInstanceCore": "node roles: Session Manager instead of SSH keys",
    "service-role/AmazonEBSCSIDriverPolicy": "the EBS CSI controller (its permissions are tag-scoped by AWS)",
}
# Service principals and whether their role assumption can be pinned to this account.
SOURCE_ACCOUNT_SUPPORTED = {"pods.eks.amazonaws.com", "codebuild.amazonaws.com"}
SOURCE_ACCOUNT_EXEMPT = {
    "ec2.amazonaws.com": "roles reach EC2 through instance profiles that only this account attaches",
    "eks.amazonaws.com": "EKS documents the cluster role's trust policy without source conditions",
}

# Irreversible deletions of data or of the keys that decrypt it (class destroys-data): never on
# every resource of a kind, whatever the condition. A tag condition does not make them safe: tags
# are changed by anyone with the service's TagResource. AWS's own warnings:
# https://docs.aws.amazon.com/kms/latest/developerguide/deleting-keys.html ("deleting a KMS key is
# destructive and potentially dangerous"), https://docs.aws.amazon.com/AmazonS3/latest/userguide/delete-bucket.html,
# https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/USER_DeleteInstance.html.
DESTROYS_DATA = {
    "s3:deletebucket",
    "s3:deleteobject",
    "s3:deleteobjectversion",
    "s3:putlifecycleconfiguration",
    "kms:schedulekeydeletion",
    "kms:disablekey",
    "kms:deleteimportedkeymaterial",
    "rds:deletedbinstance",
    "rds:deletedbcluster",
    "rds:deletedbsnapshot",
    "rds:deletedbclustersnapshot",
    "fsx:deletefilesystem",
    "fsx:deletebackup",
    "fsx:deletevolume",
    "ec2:deletevolume",
    "ec2:deletesnapshot",
    "ecr:deleterepository",
    "ecr:batchdeleteimage",
    "secretsmanager:deletesecret",
    "dynamodb:deletetable",
    "elasticfilesystem:deletefilesystem",
    "logs:deleteloggroup",
    "backup:deleterecoverypoint",
    "backup:deletebackupvault",
}
# Actions that grant permissions (class grants-permissions): whoever may attach or write a policy,
# or a new policy version, or a role's trust, can make any principal it reaches an administrator.
# AWS delegates these only under a permissions boundary the caller must set (condition key
# iam:PermissionsBoundary) or a fixed list of policies (iam:PolicyARN):
# https://docs.aws.amazon.com/IAM/latest/UserGuide/access_policies_boundaries.html (delegating
# responsibility to others), https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_iam-condition-keys.html.
GRANTS_UNDER_A_BOUNDARY = {
    "iam:attachrolepolicy",
    "iam:attachuserpolicy",
    "iam:attachgrouppolicy",
    "iam:putrolepolicy",
    "iam:putuserpolicy",
    "iam:putgrouppolicy",
    "iam:putrolepermissionsboundary",
    "iam:putuserpermissionsboundary",
    "iam:createrole",
    "iam:createuser",
}
# No condition fences these: a new default policy version, a rewritten trust, new credentials or a
# new group membership grant whatever the caller chooses
# (https://docs.aws.amazon.com/IAM/latest/UserGuide/access_policies_managed-versioning.html).
GRANTS_ALWAYS = {
    "iam:createpolicyversion",
    "iam:setdefaultpolicyversion",
    "iam:updateassumerolepolicy",
    "iam:createaccesskey",
    "iam:createloginprofile",
    "iam:updateloginprofile",
    "iam:addusertogroup",
    "iam:deleterolepermissionsboundary",
    "iam:deleteuserpermissionsboundary",
}


def listed(value: object) -> list:
    if value is None:
        return []
    return [value] if isinstance(value, str | dict) else list(value)  # type: ignore[call-overload]


def _pattern(action: str) -> re.Pattern[str]:
    """An IAM action pattern as a regex: `*` any run of characters, `?` one, case-insensitive."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in action), re.I)


def _covered(actions: list[str], names: set[str]) -> list[str]:
    """The names (lower-case actions) that any of `actions` (patterns) grants."""
    patterns = [_pattern(action) for action in actions]
    return sorted(name for name in names if any(p.fullmatch(name) for p in patterns))


# ------------------------------------------------------------------ reading the stacks


def statements_of(document: dict) -> list[dict]:
    """A document's statements: `Statement` is a list or, as the grammar allows, one object
    (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_grammar.html)."""
    return listed(document.get("Statement", []))


def _block_statement(block: dict) -> dict:
    """An aws_iam_policy_document `statement` block as a policy statement."""

    def principals(blocks: list[dict]) -> object:
        if any(b.get("type") == "*" for b in blocks):
            return "*"
        merged: dict[str, list[str]] = {}
        for b in blocks:
            merged.setdefault(b["type"], []).extend(listed(b.get("identifiers", [])))
        return merged

    statement: dict = {"Effect": block.get("effect", "Allow")}
    for attribute, element in (
        ("sid", "Sid"),
        ("actions", "Action"),
        ("not_actions", "NotAction"),
        ("resources", "Resource"),
        ("not_resources", "NotResource"),
    ):
        if block.get(attribute) is not None:
            statement[element] = block[attribute]
    for attribute, element in (("principals", "Principal"), ("not_principals", "NotPrincipal")):
        if block.get(attribute):
            statement[element] = principals(listed(block[attribute]))
    condition: dict[str, dict[str, list[str]]] = {}
    for c in listed(block.get("condition", [])):
        condition.setdefault(c["test"], {}).setdefault(c["variable"], []).extend(listed(c.get("values", [])))
    if condition:
        statement["Condition"] = condition
    return statement


def _read(policy: object, data: dict, depth: int = 0) -> dict | None:
    """A policy attribute's document: literal JSON, or an aws_iam_policy_document of the stack
    (with its source and override documents). None when the gate cannot read it."""
    if isinstance(policy, dict):
        return policy
    if not isinstance(policy, str) or depth > 5:
        return None
    reference = DATA_DOCUMENT.match(policy)
    if reference is None:
        try:
            document = json.loads(policy)
        except json.JSONDecodeError:
            return None
        return document if isinstance(document, dict) else None
    body = data.get(reference.group(1))
    if body is None:
        return None
    found: list[dict] = []
    for attribute in ("source_policy_documents", "source_json", "override_policy_documents", "override_json"):
        for source in listed(body.get(attribute)):
            document = _read(source, data, depth + 1)
            if document is None:
                return None
            found += statements_of(document)
    found += [_block_statement(block) for block in listed(body.get("statement", []))]
    return {"Version": body.get("version", "2012-10-17"), "Statement": found}


def _inferred_kind(document: dict) -> str:
    """The kind of an unreferenced data-source document: a trust when it names principals that may
    assume a role, a resource policy when it names others, else an identity policy."""
    with_principals = [s for s in statements_of(document) if "Principal" in s or "NotPrincipal" in s]
    if not with_principals:
        return "identity"
    actions = [a.lower() for s in with_principals for a in listed(s.get("Action", []))]
    return (
        "trust"
        if actions and all(a.startswith("sts:assumerole") or a.startswith("sts:tag") for a in actions)
        else "resource"
    )


def policies(stack: dict) -> Iterator[tuple[str, str, dict | None]]:
    """(address, kind, parsed document or None when unreadable) for every policy document in a
    stack: resources' policy attributes, aws_iam_role inline_policy blocks, and the
    aws_iam_policy_document data sources no resource refers to (one that is referred to is read
    where it is used, as the kind of policy it is there)."""
    resources = stack.get("resource", {})
    data = stack.get("data", {}).get("aws_iam_policy_document", {})
    referenced: set[str] = set()

    def read(policy: object) -> dict | None:
        if isinstance(policy, str) and (reference := DATA_DOCUMENT.match(policy)):
            referenced.add(reference.group(1))
        return _read(policy, data)

    for resource_type, attributes in POLICY_ATTRIBUTES.items():
        for logical_id, body in resources.get(resource_type, {}).items():
            for attribute, kind in attributes.items():
                if attribute in body:
                    yield f"{resource_type}.{logical_id}", kind, read(body[attribute])
    for logical_id, body in resources.get("aws_iam_role", {}).items():
        for index, block in enumerate(listed(body.get("inline_policy"))):
            if isinstance(block, dict) and "policy" in block:
                yield f"aws_iam_role.{logical_id} inline_policy[{index}]", "identity", read(block["policy"])
    for name in data:
        if name not in referenced:
            document = _read(f"${{data.aws_iam_policy_document.{name}.json}}", data)
            yield f"data.aws_iam_policy_document.{name}", _inferred_kind(document or {}), document


def statements(profile_stacks: dict) -> Iterator[tuple[str, str, dict]]:
    for stack in profile_stacks.values():
        for address, kind, document in policies(stack):
            for statement in statements_of(document or {}):
                yield address, kind, statement


# ------------------------------------------------------------------ resources


# A bucket ARN the platform creates: in the same stack, or another layer's bucket through remote state.
BUCKET_REFERENCE = re.compile(
    r"^\$\{(aws_s3_bucket\.[\w-]+\.arn|data\.terraform_remote_state\.[\w-]+\.outputs\."
    r"cross-stack-output-aws_s3_bucket[\w-]+arn)\}(/|$)"
)


def _wide_resource(resource: str) -> bool:
    """'*', or an ARN that names no particular resource: a wildcard service, account-wide
    `*`, a whole resource type (`instance/*`), or a name of wildcards only (`secret:*-*`)."""
    if resource == "*":
        return True
    parts = resource.split(":", 5)
    if len(parts) < 6 or parts[0] != "arn":
        return False
    service, name = parts[2], parts[5]
    return (
        "*" in service
        or name in ("*", "*/*")
        or bool(re.fullmatch(r"[\w-]+[/:]\*", name))
        or bool(re.fullmatch(r"([\w-]+[/:])?[*?/:.-]*\*[*?/:.-]*", name))
    )


# Resources a new instance only uses (RunInstances and CreateFleet need a grant on each resource the
# launch names: its image, subnet, security groups, reservation, placement group): no action is
# taken on them. Karpenter's published controller policy grants these without a condition
# (AllowScopedEC2InstanceAccessActions); the instance itself is tag-scoped in another statement.
LAUNCH_INPUTS = re.compile(
    r"^arn:aws:ec2:[^:]*:[^:]*:(image|snapshot|security-group|subnet|capacity-reservation|"
    r"placement-group)/\*$"
)
LAUNCHES = {"ec2:runinstances", "ec2:createfleet"}


# ------------------------------------------------------------------ conditions
# Condition operators: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html
# - StringLike, ArnLike and ArnEquals take the wildcards * and ?: a value of wildcards only matches
#   every value the key can have (class wildcard-condition).
# - ...IfExists: "If the policy key is present in the context of the request, process the key as
#   specified in the policy. If the key is not present, evaluate the condition element as true."
# - The negated operators (StringNotEquals, ArnNotLike, ...) are true when the key is absent, and
#   grant everything but what they name; Null tests only whether a key is there.
# - ForAllValues: "returns true if there are no context keys in the request"
#   (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-single-vs-multi-valued-context-keys.html).
# All of these are class absent-key-condition: they narrow nothing for a request without the key.
WILDCARD_OPERATORS = {"stringlike", "arnlike", "arnequals"}
WILDCARD_ONLY = re.compile(r"(arn:[\w*-]*:)?[*?:/]*\*[*?:/]*|arn:\*")


def _base_operator(operator: str) -> str:
    base = operator.lower()
    for prefix in ("forallvalues:", "foranyvalue:"):
        base = base.removeprefix(prefix)
    return base.removesuffix("ifexists")


def _holds_when_absent(operator: str) -> bool:
    lowered = operator.lower()
    base = _base_operator(operator)
    return lowered.endswith("ifexists") or lowered.startswith("forallvalues:") or "not" in base or base == "null"


def _entries(condition: object) -> Iterator[tuple[str, str, list[str]]]:
    """(operator, key, values) of a Condition block."""
    if not isinstance(condition, dict):
        return
    for operator, block in condition.items():
        if isinstance(block, dict):
            for key, values in block.items():
                yield operator, key, [str(v) for v in listed(values)]


def _why_not_scoping(operator: str, key: str, values: list[str], kind: str) -> str | None:
    """None when this entry narrows what a statement grants; else the class of why it does not
    (or "" for the region, time and transport keys, which never did)."""
    if NON_SCOPING_KEYS.match(key):
        return ""
    if kind == "identity" and CALLER_KEYS.match(key):
        return "caller-condition"
    if _holds_when_absent(operator):
        return "absent-key-condition"
    if _base_operator(operator) in WILDCARD_OPERATORS and all(WILDCARD_ONLY.fullmatch(v) for v in values):
        return "wildcard-condition"
    return None


def _scope(condition: object, kind: str) -> tuple[bool, str, str]:
    """(does the condition narrow what the statement grants, the class when it does not, why)."""
    dropped = []
    for operator, key, values in _entries(condition):
        why = _why_not_scoping(operator, key, values, kind)
        if why is None:
            return True, "", ""
        if why:
            dropped.append((why, f"{operator} {key} {values}"))
    if not dropped:
        return False, "unscoped", "no condition narrows it"
    return False, dropped[0][0], "its only conditions narrow nothing: " + "; ".join(text for _, text in dropped)


def _pin(condition: object, matches) -> str:
    """How a condition fixes the keys `matches` accepts: "pinned" (an exact value, or a pattern
    without wildcards), "wildcard-condition", "absent-key-condition", or "" (no such key)."""
    found = ""
    for operator, key, values in _entries(condition):
        if not matches(key.lower()):
            continue
        if _holds_when_absent(operator):
            found = found or "absent-key-condition"
        elif _base_operator(operator) in WILDCARD_OPERATORS and any("*" in v or "?" in v for v in values):
            found = "wildcard-condition" if found in ("", "absent-key-condition") else found
        else:
            return "pinned"
    return found


# ------------------------------------------------------------------ identity policies


def _action_spelling(where: str, actions: list[str]) -> list[str]:
    found = []
    for action in actions:
        if action == "*" or "*" in action or "?" in action:
            # Wildcards in actions: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_action.html
            # `iam:Pass*` is iam:PassRole, `iam:Put*Policy` every policy write: the platform names
            # each action it grants, so a reviewer reads what it grants.
            found.append(f"{where}: [action-wildcard] the action wildcard {action!r}: name the actions")
        elif not CANONICAL_ACTION.match(action) and action not in LOWER_CASE_ACTIONS:
            found.append(
                f"{where}: [action-case] {action!r} is not spelled as AWS spells it (IAM matches actions "
                "case-insensitively, so it grants the action it spells in another case)"
            )
    return found


def _wide_actions(where: str, actions: list[str], resources: list[str], condition: dict) -> list[str]:
    lowered = [a.lower() for a in actions]
    mutating = [
        a
        for a, low in zip(actions, lowered, strict=True)
        if (not READ_ONLY.match(low) or SECRET_READS.match(low)) and low not in RESOURCELESS
    ]
    launch_inputs_only = {a.lower() for a in mutating} <= LAUNCHES
    wide = [r for r in resources if _wide_resource(r) and not (launch_inputs_only and LAUNCH_INPUTS.match(r))]
    if not (wide and mutating):
        return []
    scoped, cls, why = _scope(condition, "identity")
    if scoped:
        return []
    return [f"{where}: [{cls}] {mutating} on {wide} without a scoping condition ({why})"]


def _negations(where: str, statement: dict) -> list[str]:
    """NotAction, NotResource and NotPrincipal grant everything they do not name
    (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_notaction.html)."""
    return [
        f"{where}: [negation] {key} grants everything it does not name"
        for key in ("NotAction", "NotResource", "NotPrincipal")
        if key in statement
    ]


def _principal_of_this_account(principal: str) -> bool:
    return "${data.aws_caller_identity." in principal or "${data.aws_iam_session_context." in principal


def _pass_role(where: str, actions: list[str], resources: list[str], condition: dict) -> list[str]:
    """iam:PassRole hands a role to a service: one role, to a named service
    (https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_use_passrole.html)."""
    if not _covered(actions, {"iam:passrole"}):
        return []
    found = []
    if any("*" in r or "?" in r for r in resources):
        found.append(f"{where}: [pass-role] iam:PassRole on {resources}, not one role")
    pin = _pin(condition, lambda key: key == "iam:passedtoservice")
    if pin != "pinned":
        cls = pin or "pass-role"
        found.append(f"{where}: [{cls}] iam:PassRole without iam:PassedToService naming one service")
    return found


def _s3_scope(where: str, actions: list[str], resources: list[str], platform: str) -> list[str]:
    """S3 actions only on the platform's own buckets: a reference to a bucket it creates, or an
    exact name <platform>-... (wildcards only in the key part)."""
    if not any(a.lower().startswith("s3:") or a == "*" for a in actions):
        return []
    found = []
    for resource in resources:
        if BUCKET_REFERENCE.match(resource):
            continue
        bucket = resource.removeprefix("arn:aws:s3:::").split("/", 1)[0]
        if not resource.startswith("arn:aws:s3:::") or "*" in bucket or not bucket.startswith(f"{platform}-"):
            found.append(f"{where}: [s3-scope] S3 access to {resource}, not one of the platform's buckets")
    return found


def _destroys_data(where: str, actions: list[str], resources: list[str]) -> list[str]:
    destroyed = _covered(actions, DESTROYS_DATA)
    wide = [r for r in resources if _wide_resource(r)]
    if destroyed and wide:
        return [f"{where}: [destroys-data] {destroyed} on {wide}: name the resources it may delete"]
    return []


def _grants_permissions(where: str, actions: list[str], condition: dict) -> list[str]:
    always = _covered(actions, GRANTS_ALWAYS)
    fenced = _covered(actions, GRANTS_UNDER_A_BOUNDARY)
    found = [f"{where}: [grants-permissions] {always} grant whatever the caller chooses"] if always else []
    boundary = _pin(condition, lambda key: key in ("iam:permissionsboundary", "iam:policyarn"))
    if fenced and boundary != "pinned":
        found.append(
            f"{where}: [grants-permissions] {fenced} without iam:PermissionsBoundary or iam:PolicyARN "
            "fixed to exact policies: the caller can grant itself anything"
        )
    return found


def _iam_any_account(where: str, actions: list[str], resources: list[str]) -> list[str]:
    """IAM and STS resources in any account: `arn:aws:iam::*:role/OrganizationAccountAccessRole`
    is every member account's administrator role
    (https://docs.aws.amazon.com/organizations/latest/userguide/orgs_manage_accounts_access-cross-account-role.html;
    wildcards in ARNs: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_resource.html)."""
    mutating = [a for a in actions if not READ_ONLY.match(a.lower()) or SECRET_READS.match(a.lower())]
    if not mutating:
        return []
    found = []
    for resource in resources:
        parts = resource.split(":", 5)
        if (
            len(parts) == 6
            and parts[0] == "arn"
            and parts[2] in ("iam", "sts")
            and ("*" in parts[4] or "?" in parts[4])
        ):
            found.append(f"{where}: [iam-any-account] {mutating} on {resource}: IAM resources of any account")
    return found


# ------------------------------------------------------------------ trust and resource policies


def _trust(where: str, statement: dict, condition: dict) -> list[str]:
    """Who may assume the role (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_principal.html):
    no one outside this account, and services only on this account's behalf."""
    principal = statement.get("Principal", {})
    if not isinstance(principal, dict):
        return [f"{where}: [trust-principal] trust for AWS principal {principal!r}: everyone may assume the role"]
    found = []
    for aws in listed(principal.get("AWS")):
        if not _principal_of_this_account(aws):
            found.append(f"{where}: [trust-principal] trust for AWS principal {aws!r}, not this account")
    for service in listed(principal.get("Service")):
        if service in SOURCE_ACCOUNT_EXEMPT:
            continue
        if service not in SOURCE_ACCOUNT_SUPPORTED:
            found.append(f"{where}: [source-account] trust for {service}: decide whether it supports aws:SourceAccount")
            continue
        # The confused deputy: https://docs.aws.amazon.com/IAM/latest/UserGuide/confused-deputy.html
        pin = _pin(condition, lambda key: key == "aws:sourceaccount")
        if pin != "pinned":
            found.append(f"{where}: [{pin or 'source-account'}] trust for {service} without aws:SourceAccount")
    for federated in listed(principal.get("Federated")):
        found += _web_identity(where, federated, condition)
    return found


def _web_identity(where: str, federated: str, condition: dict) -> list[str]:
    """An OIDC provider's tokens: the trust must fix the audience and the subject. Without `sub`
    any identity the provider issues a token to (every service account of an EKS cluster, every
    repository's workflow) may assume the role. AWS: "we recommend that you also add a condition
    for the sub (subject) claim" (https://docs.aws.amazon.com/IAM/latest/UserGuide/id_roles_create_for-idp_oidc.html),
    and EKS's trust names one service account exactly
    (https://docs.aws.amazon.com/eks/latest/userguide/associate-service-account-role.html)."""
    if "saml-provider/" in federated:
        return [f"{where}: [federated-other] trust for the SAML provider {federated}: the gate has no rule for it"]
    found = []
    sub = _pin(condition, lambda key: key.endswith(":sub"))
    if sub == "":
        found.append(f"{where}: [federated-without-sub] trust for {federated} without a `sub` condition")
    elif sub != "pinned":
        found.append(f"{where}: [federated-wildcard-sub] trust for {federated} whose `sub` matches any subject ({sub})")
    if _pin(condition, lambda key: key.endswith(":aud")) != "pinned":
        found.append(f"{where}: [federated-other] trust for {federated} without an exact `aud` condition")
    return found


def _resource_policy(where: str, statement: dict, condition: dict) -> list[str]:
    principal = statement.get("Principal")
    if principal == "*" or (isinstance(principal, dict) and "*" in listed(principal.get("AWS"))):
        scoped, cls, why = _scope(condition, "resource")
        return [] if scoped else [f"{where}: [{cls}] allows everyone without a scoping condition ({why})"]
    found = []
    if isinstance(principal, dict):
        for aws in listed(principal.get("AWS")):
            if not _principal_of_this_account(aws):
                found.append(f"{where}: [resource-principal] grants AWS principal {aws!r}, not this account")
        if principal.get("Service"):
            pin = _pin(condition, lambda key: key in ("aws:sourcearn", "aws:sourceaccount"))
            if pin != "pinned":
                found.append(
                    f"{where}: [{pin or 'confused-deputy'}] grants {principal['Service']} without aws:SourceArn "
                    "or aws:SourceAccount (the confused deputy)"
                )
    return found


# ------------------------------------------------------------------ the gate


def problems_of(address: str, kind: str, statement: dict, *, platform: str) -> list[str]:
    """What the gate refuses in one statement; `address` names the resource and the statement."""
    if not isinstance(statement, dict):
        return [f"{address}: [unreadable-policy] a statement that is not an object: {statement!r}"]
    if statement.get("Effect") != "Allow":
        return []
    actions = [str(a) for a in listed(statement.get("Action", []))]
    resources = [str(r) for r in listed(statement.get("Resource", []))]
    condition = statement.get("Condition", {})
    negations = _negations(address, statement)
    named = actions + [str(a) for a in listed(statement.get("NotAction", []))]
    spelling = [p for p in _action_spelling(address, named) if "[action-case]" in p]
    if kind == "trust":
        return [*negations, *spelling, *_trust(address, statement, condition)]
    if kind == "resource":
        # Resource policies are judged by whom they admit. Their actions may be wildcards: a key
        # policy's first statement is AWS's default, kms:* for the account, which leaves the key's
        # use to IAM policies (https://docs.aws.amazon.com/kms/latest/developerguide/key-policy-default.html).
        return [*negations, *spelling, *_resource_policy(address, statement, condition)]
    return [
        *negations,
        *_action_spelling(address, actions),
        *_wide_actions(address, actions, resources, condition),
        *_pass_role(address, actions, resources, condition),
        *_s3_scope(address, actions, resources, platform),
        *_destroys_data(address, actions, resources),
        *_grants_permissions(address, actions, condition),
        *_iam_any_account(address, actions, resources),
    ]


def _statement_address(address: str, index: int, statement: object) -> str:
    sid = statement.get("Sid") if isinstance(statement, dict) else None
    return f"{address} Statement[{index}]" + (f" {sid!r}" if sid else "")


def _attachments(stack: dict) -> list[str]:
    """Managed policies, by every route that attaches one: an AWS managed policy only when the
    platform says why it needs it (AdministratorAccess, for one, grants everything:
    https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AdministratorAccess.html), and a
    customer managed one only when it is an aws_iam_policy of the stack, whose document the gate reads."""
    resources = stack.get("resource", {})
    found = []
    for resource_type, attribute in ATTACHMENTS.items():
        for logical_id, body in resources.get(resource_type, {}).items():
            for arn in listed(body.get(attribute)):
                where = f"{resource_type}.{logical_id}"
                own = OWN_POLICY_ARN.match(str(arn))
                if str(arn).startswith(AWS_MANAGED):
                    if str(arn).removeprefix(AWS_MANAGED) not in MANAGED_POLICIES:
                        found.append(f"{where}: [managed-policy] attaches {arn}: say why the platform needs it")
                elif not (own and own.group(1) in resources.get("aws_iam_policy", {})):
                    found.append(f"{where}: [managed-policy] attaches {arn}, a policy the gate cannot read")
    return found


def stack_problems(stack: dict, *, platform: str) -> list[str]:
    """Everything the gate refuses in one synthesized stack."""
    problems = _attachments(stack)
    for address, kind, document in policies(stack):
        if document is None:
            problems.append(f"{address}: [unreadable-policy] a policy document the gate cannot read")
            continue
        for index, statement in enumerate(statements_of(document)):
            problems += problems_of(_statement_address(address, index, statement), kind, statement, platform=platform)
    return problems
