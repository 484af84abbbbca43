from collections.abc import Iterable as _Iterable
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar

from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from google.protobuf.internal import containers as _containers

DESCRIPTOR: _descriptor.FileDescriptor

class Tensor(_message.Message):
    __slots__ = ("dtype", "shape", "data")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    dtype: str
    shape: _containers.RepeatedScalarFieldContainer[int]
    data: bytes
    def __init__(
        self, dtype: str | None = ..., shape: _Iterable[int] | None = ..., data: bytes | None = ...
    ) -> None: ...

class PackedFrames(_message.Message):
    __slots__ = ("obs_shape", "rows")
    OBS_SHAPE_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    obs_shape: _containers.RepeatedScalarFieldContainer[int]
    rows: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, obs_shape: _Iterable[int] | None = ..., rows: _Iterable[bytes] | None = ...) -> None: ...

class Transitions(_message.Message):
    __slots__ = ("observations", "actions", "rewards", "next_observations", "discounts", "frames")
    OBSERVATIONS_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    REWARDS_FIELD_NUMBER: _ClassVar[int]
    NEXT_OBSERVATIONS_FIELD_NUMBER: _ClassVar[int]
    DISCOUNTS_FIELD_NUMBER: _ClassVar[int]
    FRAMES_FIELD_NUMBER: _ClassVar[int]
    observations: Tensor
    actions: Tensor
    rewards: Tensor
    next_observations: Tensor
    discounts: Tensor
    frames: PackedFrames
    def __init__(
        self,
        observations: Tensor | _Mapping | None = ...,
        actions: Tensor | _Mapping | None = ...,
        rewards: Tensor | _Mapping | None = ...,
        next_observations: Tensor | _Mapping | None = ...,
        discounts: Tensor | _Mapping | None = ...,
        frames: PackedFrames | _Mapping | None = ...,
    ) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class OpenSessionReply(_message.Message):
    __slots__ = ("actor_id",)
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    actor_id: str
    def __init__(self, actor_id: str | None = ...) -> None: ...

class PushRequest(_message.Message):
    __slots__ = ("actor_id", "sequence", "transitions", "priorities")
    ACTOR_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TRANSITIONS_FIELD_NUMBER: _ClassVar[int]
    PRIORITIES_FIELD_NUMBER: _ClassVar[int]
    actor_id: str
    sequence: int
    transitions: Transitions
    priorities: Tensor
    def __init__(
        self,
        actor_id: str | None = ...,
        sequence: int | None = ...,
        transitions: Transitions | _Mapping | None = ...,
        priorities: Tensor | _Mapping | None = ...,
    ) -> None: ...

class PushReply(_message.Message):
    __slots__ = ("accepted", "duplicate", "log_sequence", "queued")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    LOG_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    accepted: int
    duplicate: bool
    log_sequence: int
    queued: int
    def __init__(
        self,
        accepted: int | None = ...,
        duplicate: bool = ...,
        log_sequence: int | None = ...,
        queued: int | None = ...,
    ) -> None: ...

class SampleRequest(_message.Message):
    __slots__ = ("batch_size", "beta")
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    BETA_FIELD_NUMBER: _ClassVar[int]
    batch_size: int
    beta: float
    def __init__(self, batch_size: int | None = ..., beta: float | None = ...) -> None: ...

class SampleReply(_message.Message):
    __slots__ = ("transitions", "indices", "weights", "versions")
    TRANSITIONS_FIELD_NUMBER: _ClassVar[int]
    INDICES_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    transitions: Transitions
    indices: Tensor
    weights: Tensor
    versions: Tensor
    def __init__(
        self,
        transitions: Transitions | _Mapping | None = ...,
        indices: Tensor | _Mapping | None = ...,
        weights: Tensor | _Mapping | None = ...,
        versions: Tensor | _Mapping | None = ...,
    ) -> None: ...

class UpdateRequest(_message.Message):
    __slots__ = ("indices", "priorities", "versions")
    INDICES_FIELD_NUMBER: _ClassVar[int]
    PRIORITIES_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    indices: Tensor
    priorities: Tensor
    versions: Tensor
    def __init__(
        self,
        indices: Tensor | _Mapping | None = ...,
        priorities: Tensor | _Mapping | None = ...,
        versions: Tensor | _Mapping | None = ...,
    ) -> None: ...

class UpdateReply(_message.Message):
    __slots__ = ("updated", "stale")
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    updated: int
    stale: int
    def __init__(self, updated: int | None = ..., stale: int | None = ...) -> None: ...

class StatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StatsReply(_message.Message):
    __slots__ = ("json",)
    JSON_FIELD_NUMBER: _ClassVar[int]
    json: str
    def __init__(self, json: str | None = ...) -> None: ...

class CheckpointRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CheckpointReply(_message.Message):
    __slots__ = ("path", "log_sequence")
    PATH_FIELD_NUMBER: _ClassVar[int]
    LOG_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    path: str
    log_sequence: int
    def __init__(self, path: str | None = ..., log_sequence: int | None = ...) -> None: ...
