"""The shared pydantic base: camelCase on the wire, unknown fields rejected."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from shiftnet.api.compact import COMPACT, share_fields_set


class Wire(BaseModel):
    """Base of every API struct: Kubernetes camelCase names, extra fields forbidden."""

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        alias_generator=to_camel,
        validate_assignment=False,
    )

    def model_post_init(self, context: Any, /) -> None:
        if context is COMPACT:  # decoded for a long-lived cache (informers)
            share_fields_set(self)

    def to_dict(self) -> dict[str, Any]:
        """The Kubernetes wire shape (camelCase, no nulls)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class OwnerReference(Wire):
    """The object this one belongs to (an EndpointSlice's Service)."""

    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ManagedFieldsEntry(Wire):
    """Which fields one manager set, by one operation (server-side apply's bookkeeping)."""

    manager: str | None = Field(None, description="The name of the writer that owns these fields.")
    operation: str | None = Field(None, description="Apply or Update.")
    api_version: str | None = Field(None, description="The version the fields are named in.")
    time: str | None = Field(
        None, description="When this entry's fields last changed (RFC 3339, UTC)."
    )
    fields_type: str | None = Field(None, description="The format of fieldsV1: FieldsV1.")
    fields_v1: dict[str, Any] | None = Field(
        None, description="The owned fields, as a tree of f:, k:, v: and . keys."
    )
    subresource: str | None = Field(None, description="The subresource written, if any.")


class ObjectMeta(Wire):
    """Metadata every object has: its name, namespace, labels and bookkeeping."""

    name: str = Field("", description="The object's name, unique per kind within a namespace.")
    generate_name: str | None = Field(
        None, description="A prefix from which the server makes a unique name when name is empty."
    )
    namespace: str | None = Field(
        None, description="The namespace of a namespaced object; empty for cluster-wide kinds."
    )
    labels: dict[str, str] = Field(
        default_factory=dict, description="Key/value pairs that selectors match on."
    )
    annotations: dict[str, str] = Field(
        default_factory=dict, description="Key/value pairs for tools and settings; not selectable."
    )
    uid: str | None = Field(None, description="Unique for all time; set by the server.")
    resource_version: str | None = Field(
        None,
        description="The version of the object the server stored, for optimistic concurrency "
        "and watches. Opaque to clients.",
    )
    generation: int | None = Field(None, description="Counts changes to the desired state.")
    creation_timestamp: str | None = Field(
        None, description="When the server created the object (RFC 3339, UTC)."
    )
    deletion_timestamp: str | None = Field(
        None, description="When the object is to be deleted; set by the server."
    )
    deletion_grace_period_seconds: int | None = Field(
        None,
        description="Seconds the object has to stop gracefully before it is deleted; "
        "set by the server with deletionTimestamp.",
    )
    owner_references: list[OwnerReference] | None = Field(
        None, description="The objects this one belongs to."
    )
    managed_fields: list[ManagedFieldsEntry] | None = Field(
        None, description="Which writer set which fields; kept by the API server."
    )


class Condition(Wire):
    type: str
    status: str = "Unknown"
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    last_probe_time: str | None = None


class Resource(Wire):
    """A top-level object: apiVersion, kind, metadata (+ spec/status in subclasses)."""

    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = ""
    RESOURCE: ClassVar[str] = ""  # plural, lowercase: the store key prefix
    NAMESPACED: ClassVar[bool] = True
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ()

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        if not self.api_version:
            self.api_version = self.API_VERSION
        if not self.kind:
            self.kind = self.KIND

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str | None:
        return self.metadata.namespace

    @property
    def key(self) -> tuple[str, str]:
        """(namespace or "", name): the identity inside one resource type."""
        return (self.metadata.namespace or "", self.metadata.name)
