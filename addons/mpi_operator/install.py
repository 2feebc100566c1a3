"""Kubeflow MPI Operator, the v2beta1 controller that runs MPIJobs (the NCCL all-reduce test is
one). Kubeflow publishes no Helm chart: the controller comes from the release's own manifest,
downloaded at plan time (hashicorp/http), checked against its pinned SHA-256, and applied object by
object (kubernetes_manifest). The manifest's Namespace is left out: the platform creates the
namespace itself, with its Pod Security labels and NetworkPolicies."""

from __future__ import annotations

from cdktf import TerraformDataSource, TerraformStack

from addons.mpi_operator import DEFINITION, MpiOperatorConfig
from components.expressions import Expression, expression, quoted_template, string_literal
from components.helm.addon import AddonContext, AddonSpec, InstalledAddon, RuntimePath
from components.k8s.for_each import ObjectsForEachProps, objects_for_each
from profiles.versions import HTTP_PROVIDER_VERSION, ReleaseArtifact


class MpiOperatorAddon(AddonSpec[MpiOperatorConfig]):
    definition = DEFINITION
    release_name = "mpi-operator"

    def runtime_paths(self, settings: MpiOperatorConfig) -> tuple[RuntimePath, ...]:
        # The controller only talks to the API server (it creates launchers, workers, Services and
        # the SSH Secret there; deploy/v2beta1/mpi-operator.yaml at v0.8.0 runs no webhook).
        return (
            RuntimePath(
                what="tenants' pods cannot reach the controller (its metrics are for Prometheus)",
                direction="Ingress",
                peer="tenants",
                port=8080,
                open=False,
            ),
        )

    def install(self, ctx: AddonContext) -> InstalledAddon:
        artifact = self.definition.pin
        assert isinstance(artifact, ReleaseArtifact)
        TerraformStack.of(ctx.scope).add_override(
            "terraform.required_providers.http", {"source": "hashicorp/http", "version": HTTP_PROVIDER_VERSION}
        )
        download = TerraformDataSource(ctx.scope, "mpi-operator-manifest", terraform_resource_type="http")
        download.add_override("url", artifact.url)
        # A changed or truncated download fails the plan instead of installing something unreviewed.
        download.add_override(
            "lifecycle",
            {
                "postcondition": [
                    {
                        "condition": expression(f"sha256(self.response_body) == {string_literal(artifact.sha256)}"),
                        "error_message": (
                            f"{artifact.url} is not the reviewed {artifact.tag} manifest (SHA-256 differs)."
                        ),
                    }
                ]
            },
        )
        namespace = self.guarded_namespace(ctx)
        documents = f"provider::kubernetes::manifest_decode_multi({download.fqn}.response_body)"
        key = quoted_template(Expression("doc.kind"), "/", Expression("doc.metadata.name"))
        objects = objects_for_each(
            ctx.scope,
            "mpi-operator",
            props=ObjectsForEachProps(
                for_each=expression(
                    f"{{ for doc in {documents} : {key} => doc if doc.kind != {string_literal('Namespace')} }}"
                ),
                manifest=expression("each.value"),
                depends_on=namespace,
            ),
        )
        return InstalledAddon(name=self.release_name, ready=(objects,))


ADDON = MpiOperatorAddon()
