"""WSGI middleware in front of moto that serves the few AWS APIs moto does not implement and
this platform uses: EC2 placement groups, and EKS access entries (with policy associations),
managed add-ons and Pod Identity associations. State is kept in memory, per emulator."""

from __future__ import annotations

import json
import re
import uuid
from typing import ClassVar
from urllib.parse import parse_qs, unquote

ACCOUNT = "123456789012"


def _json(start_response, status: int, body: dict | None):
    payload = json.dumps(body or {}).encode()
    start_response(
        f"{status} {'OK' if status < 400 else 'Error'}",
        [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))],
    )
    return [payload]


def _xml(start_response, body: str):
    payload = f'<?xml version="1.0" encoding="UTF-8"?>\n{body}'.encode()
    start_response("200 OK", [("Content-Type", "text/xml"), ("Content-Length", str(len(payload)))])
    return [payload]


def _eks_error(start_response, status: int, kind: str, message: str):
    payload = json.dumps({"message": message}).encode()
    start_response(
        f"{status} Error",
        [("Content-Type", "application/json"), ("x-amzn-ErrorType", kind), ("Content-Length", str(len(payload)))],
    )
    return [payload]


class EmulatorExtensions:
    def __init__(self, moto_app):
        self.moto_app = moto_app
        self.placement_groups: dict[str, dict] = {}
        self.cluster_security_groups: dict[str, str] = {}
        self.access_entries: dict[tuple[str, str], dict] = {}
        self.access_policies: dict[tuple[str, str], dict[str, dict]] = {}
        self.addons: dict[tuple[str, str], dict] = {}
        self.pod_identities: dict[tuple[str, str], dict] = {}
        self.calls: list[str] = []  # which extension handled what, for tests

    # ------------------------------------------------------------------ dispatch
    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        method = environ["REQUEST_METHOD"]
        if path.rstrip("/") == "/addons/supported-versions":
            return self._addon_versions(environ, start_response)
        if path.startswith("/clusters/"):
            handled = self._eks(environ, start_response, method, path)
            if handled is not None:
                return handled
        if path.rstrip("/") == "/clusters" or re.fullmatch(r"/clusters/[^/]+", path):
            return self._cluster_security_group(environ, start_response, method, path)
        if method == "POST" and path in ("/", ""):
            length = int(environ.get("CONTENT_LENGTH") or 0)
            raw = environ["wsgi.input"].read(length) if length else b""
            form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
            if form.get("Action", "").endswith("PlacementGroup") or form.get("Action") == "DescribePlacementGroups":
                return self._placement(start_response, form)
            import io

            environ["wsgi.input"] = io.BytesIO(raw)
        return self.moto_app(environ, start_response)

    # ------------------------------------------------------------------ EKS cluster security group
    def _cluster_security_group(self, environ, start_response, method, path):
        """EKS creates a cluster security group with every cluster (nodes and control plane share
        it) and deletes it with the cluster; moto does neither, so this does it in moto's EC2."""
        from moto.ec2.models import ec2_backends

        captured: dict = {}

        def capture(status, headers, exc_info=None):
            captured.update(status=status, headers=headers)

        body = b"".join(self.moto_app(environ, capture))
        region = re.search(r"Credential=[^/]+/\d+/([^/]+)/", environ.get("HTTP_AUTHORIZATION", ""))
        backend = ec2_backends[ACCOUNT][region.group(1) if region else "us-east-1"]
        if captured["status"].startswith("200") and body:
            document = json.loads(body)
            cluster = document.get("cluster")
            if cluster:
                name = cluster["name"]
                if method == "DELETE":
                    group_id = self.cluster_security_groups.pop(name, None)
                    if group_id:
                        backend.delete_security_group(group_id=group_id)
                else:
                    if name not in self.cluster_security_groups:
                        subnet = backend.get_subnet(cluster["resourcesVpcConfig"]["subnetIds"][0])
                        group = backend.create_security_group(
                            name=f"eks-cluster-sg-{name}",
                            description="EKS cluster security group",
                            vpc_id=subnet.vpc_id,
                        )
                        self.cluster_security_groups[name] = group.id
                    cluster["resourcesVpcConfig"]["clusterSecurityGroupId"] = self.cluster_security_groups[name]
                self.calls.append(f"{method} cluster-security-group")
                body = json.dumps(document).encode()
        headers = [(k, v) for k, v in captured["headers"] if k.lower() != "content-length"]
        start_response(captured["status"], [*headers, ("Content-Length", str(len(body)))])
        return [body]

    # ------------------------------------------------------------------ EC2 placement groups
    def _placement(self, start_response, form: dict):
        action = form["Action"]
        self.calls.append(action)
        ns = 'xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"'
        if action == "CreatePlacementGroup":
            name = form["GroupName"]
            tags = {
                form[k]: form.get(k.replace(".Key", ".Value"), "")
                for k in form
                if re.match(r"TagSpecification\.1\.Tag\.\d+\.Key$", k)
            }
            group = {
                "name": name,
                "strategy": form.get("Strategy", "cluster"),
                "id": f"pg-{uuid.uuid4().hex[:17]}",
                "tags": tags,
            }
            self.placement_groups[name] = group
            return _xml(
                start_response,
                f"<CreatePlacementGroupResponse {ns}><requestId>x</requestId>"
                f"{self._pg_xml(group, 'placementGroup')}</CreatePlacementGroupResponse>",
            )
        if action == "DeletePlacementGroup":
            self.placement_groups.pop(form["GroupName"], None)
            return _xml(
                start_response,
                f"<DeletePlacementGroupResponse {ns}><return>true</return></DeletePlacementGroupResponse>",
            )
        names = [v for k, v in form.items() if k.startswith("GroupName.")]
        filters = {form[k]: form[k.replace("Name", "Value.1")] for k in form if re.match(r"Filter\.\d+\.Name$", k)}
        wanted = names or ([filters["group-name"]] if "group-name" in filters else list(self.placement_groups))
        items = "".join(self._pg_xml(self.placement_groups[n], "item") for n in wanted if n in self.placement_groups)
        return _xml(
            start_response,
            f"<DescribePlacementGroupsResponse {ns}><requestId>x</requestId>"
            f"<placementGroupSet>{items}</placementGroupSet></DescribePlacementGroupsResponse>",
        )

    @staticmethod
    def _pg_xml(group: dict, tag: str) -> str:
        tags = "".join(f"<item><key>{k}</key><value>{v}</value></item>" for k, v in group["tags"].items())
        return (
            f"<{tag}><groupName>{group['name']}</groupName><strategy>{group['strategy']}</strategy>"
            f"<state>available</state><groupId>{group['id']}</groupId><tagSet>{tags}</tagSet>"
            f"<groupArn>arn:aws:ec2:us-east-1:{ACCOUNT}:placement-group/{group['name']}</groupArn></{tag}>"
        )

    # ------------------------------------------------------------------ EKS
    def _body(self, environ) -> dict:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        return json.loads(environ["wsgi.input"].read(length) or b"{}") if length else {}

    def _eks(self, environ, start_response, method: str, path: str):
        # Split the raw path before decoding: principal ARNs carry an encoded '/'.
        raw = (environ.get("RAW_URI") or environ.get("REQUEST_URI") or path).split("?", 1)[0]
        parts = [unquote(p) for p in raw.strip("/").split("/")]
        if len(parts) < 3:
            return None
        cluster, kind, rest = parts[1], parts[2], parts[3:]
        handler = {
            "access-entries": self._access_entries,
            "addons": self._addons,
            "pod-identity-associations": self._pod_identity,
        }.get(kind)
        if handler is None:
            return None
        self.calls.append(f"{method} {kind}")
        return handler(environ, start_response, method, cluster, rest)

    # Versions the emulator offers as EKS's defaults (Mountpoint at the platform's 2.8.0 floor).
    DEFAULT_ADDON_VERSIONS: ClassVar[dict[str, str]] = {"aws-mountpoint-s3-csi-driver": "v2.8.0-eksbuild.1"}

    def _addon_versions(self, environ, start_response):
        """DescribeAddonVersions (moto has none): one default version per add-on and cluster version."""
        query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        name, kubernetes = query.get("addonName", ""), query.get("kubernetesVersion", "")
        self.calls.append("GET addon-versions")
        version = self.DEFAULT_ADDON_VERSIONS.get(name, "v1.0.0-eksbuild.1")
        return _json(
            start_response,
            200,
            {
                "addons": [
                    {
                        "addonName": name,
                        "type": "networking",
                        "owner": "aws",
                        "publisher": "eks",
                        "addonVersions": [
                            {
                                "addonVersion": version,
                                "architecture": ["amd64", "arm64"],
                                "compatibilities": [
                                    {"clusterVersion": kubernetes, "platformVersions": ["*"], "defaultVersion": True}
                                ],
                                "requiresConfiguration": False,
                            }
                        ],
                    }
                ]
            },
        )

    def _access_entries(self, environ, start_response, method, cluster, rest):
        if method == "POST" and not rest:
            body = self._body(environ)
            principal = body["principalArn"]
            entry = {
                "clusterName": cluster,
                "principalArn": principal,
                "type": body.get("type", "STANDARD"),
                "kubernetesGroups": body.get("kubernetesGroups", []),
                "username": principal,
                "accessEntryArn": f"arn:aws:eks:us-east-1:{ACCOUNT}:access-entry/{cluster}/{uuid.uuid4().hex}",
                "tags": body.get("tags", {}),
                "createdAt": 0,
                "modifiedAt": 0,
            }
            self.access_entries[(cluster, principal)] = entry
            return _json(start_response, 200, {"accessEntry": entry})
        principal = "/".join(rest[:1]) if rest else ""
        # The principal ARN arrives URL-encoded as one path segment.
        key = (cluster, principal)
        if len(rest) >= 2 and rest[1] == "access-policies":
            policies = self.access_policies.setdefault(key, {})
            if method == "POST":
                body = self._body(environ)
                association = {
                    "policyArn": body["policyArn"],
                    "accessScope": body["accessScope"],
                    "associatedAt": 0,
                    "modifiedAt": 0,
                }
                policies[body["policyArn"]] = association
                return _json(
                    start_response,
                    200,
                    {"clusterName": cluster, "principalArn": principal, "associatedAccessPolicy": association},
                )
            if method == "GET":
                return _json(
                    start_response,
                    200,
                    {
                        "clusterName": cluster,
                        "principalArn": principal,
                        "associatedAccessPolicies": list(policies.values()),
                    },
                )
            if method == "DELETE":
                policies.pop("/".join(rest[2:]), None)
                return _json(start_response, 200, {})
        if key not in self.access_entries:
            return _eks_error(start_response, 404, "ResourceNotFoundException", f"no access entry {principal}")
        if method == "GET":
            return _json(start_response, 200, {"accessEntry": self.access_entries[key]})
        if method == "DELETE":
            self.access_entries.pop(key)
            self.access_policies.pop(key, None)
            return _json(start_response, 200, {})
        return _json(start_response, 200, {"accessEntry": self.access_entries[key]})

    def _addons(self, environ, start_response, method, cluster, rest):
        if method == "POST" and not rest:
            body = self._body(environ)
            name = body["addonName"]
            arns = [
                self._create_pod_identity(cluster, "kube-system", a["serviceAccount"], a["roleArn"], owner=name)[
                    "associationArn"
                ]
                for a in body.get("podIdentityAssociations", [])
            ]
            addon = {
                "addonName": name,
                "clusterName": cluster,
                "status": "ACTIVE",
                "addonVersion": body.get("addonVersion") or "v1.0.0-eksbuild.1",
                "addonArn": f"arn:aws:eks:us-east-1:{ACCOUNT}:addon/{cluster}/{name}/{uuid.uuid4().hex}",
                "configurationValues": body.get("configurationValues"),
                "podIdentityAssociations": arns,
                "tags": body.get("tags", {}),
                "createdAt": 0,
                "modifiedAt": 0,
                "health": {"issues": []},
            }
            self.addons[(cluster, name)] = addon
            return _json(start_response, 200, {"addon": addon})
        if not rest:  # ListAddons
            return _json(start_response, 200, {"addons": [n for (c, n) in self.addons if c == cluster]})
        key = (cluster, rest[0])
        if key not in self.addons:
            return _eks_error(start_response, 404, "ResourceNotFoundException", f"no add-on {rest[0]}")
        if method == "DELETE":
            addon = self.addons.pop(key)
            for arn in addon["podIdentityAssociations"]:
                self.pod_identities = {k: v for k, v in self.pod_identities.items() if v["associationArn"] != arn}
            return _json(start_response, 200, {"addon": {**addon, "status": "DELETING"}})
        return _json(start_response, 200, {"addon": self.addons[key]})

    def _create_pod_identity(self, cluster, namespace, service_account, role_arn, owner=None) -> dict:
        association_id = f"a-{uuid.uuid4().hex[:17]}"
        association = {
            "clusterName": cluster,
            "namespace": namespace,
            "serviceAccount": service_account,
            "roleArn": role_arn,
            "associationId": association_id,
            "associationArn": f"arn:aws:eks:us-east-1:{ACCOUNT}:podidentityassociation/{cluster}/{association_id}",
            "tags": {},
            "createdAt": 0,
            "modifiedAt": 0,
            "disableSessionTags": False,
        }
        if owner:
            association["ownerArn"] = owner
        self.pod_identities[(cluster, association_id)] = association
        return association

    def _pod_identity(self, environ, start_response, method, cluster, rest):
        if method == "POST" and not rest:
            body = self._body(environ)
            association = self._create_pod_identity(cluster, body["namespace"], body["serviceAccount"], body["roleArn"])
            return _json(start_response, 200, {"association": association})
        if not rest:
            return _json(
                start_response,
                200,
                {
                    "associations": [
                        {
                            k: a[k]
                            for k in ("clusterName", "namespace", "serviceAccount", "associationArn", "associationId")
                        }
                        for (c, _), a in self.pod_identities.items()
                        if c == cluster
                    ]
                },
            )
        key = (cluster, rest[0])
        if key not in self.pod_identities:
            return _eks_error(start_response, 404, "ResourceNotFoundException", f"no association {rest[0]}")
        if method == "DELETE":
            return _json(start_response, 200, {"association": self.pod_identities.pop(key)})
        return _json(start_response, 200, {"association": self.pod_identities[key]})
