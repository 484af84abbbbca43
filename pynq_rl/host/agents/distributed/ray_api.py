"""The few Ray calls Ape-X makes, typed: the seam between our code and Ray's untyped API.

Ray's decorators and handles carry no usable types (``ray.remote`` turns a class into an actor class whose
``.options(...).remote(...)`` returns a handle whose methods have a ``.remote``), so mypy reads Ray as untyped
(``follow_imports = "skip"`` for ``ray.*`` in ``pyproject.toml``) and everything Ray returns passes through here:

* :func:`actor_class` wraps ``ray.remote`` and keeps the class's constructor signature: ``cls.remote(...)`` and
  ``cls.options(...).remote(...)`` are checked against ``__init__``. The module that defines an actor annotates the
  result with the handle :class:`~typing.Protocol` it hands out (its methods as :class:`RemoteMethod`\\ s);
* :class:`Ref` is an object reference to a result of a known type, which :func:`get` and :func:`wait` keep;
* :func:`kill`, :func:`get_actor`, :func:`is_initialized`, :func:`init`, :func:`shutdown` and
  :func:`node_ip_address` are the rest, and :data:`ACTOR_DIED` the exceptions of a call to a dead actor.

Each function looks its Ray function up when called (tests monkeypatch ``ray.init``). Importing this module imports
Ray (``pip install 'pynq-rl[distributed]'``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, Protocol, TypeVar

import ray

__all__ = [
    "ACTOR_DIED",
    "ActorClass",
    "Ref",
    "RemoteMethod",
    "actor_class",
    "get",
    "get_actor",
    "init",
    "is_initialized",
    "kill",
    "node_ip_address",
    "shutdown",
    "wait",
]

P = ParamSpec("P")
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
H_co = TypeVar("H_co", covariant=True)


class Ref(Protocol[T_co]):
    """A Ray object reference (``ray.ObjectRef``) to a ``T_co``: :func:`get` gives the value. Hashable (dict keys)."""

    def __hash__(self) -> int: ...


class RemoteMethod(Protocol[P, T_co]):
    """A method of an actor handle: ``handle.method.remote(*args)`` runs it in the actor, returns a :class:`Ref`."""

    def remote(self, *args: P.args, **kwargs: P.kwargs) -> Ref[T_co]: ...


class ActorClass(Protocol[P, H_co]):
    """A Ray actor class (what ``ray.remote`` makes of a class): ``remote(*args)`` starts an actor, the handle
    ``H_co``; ``options(**options)`` (``name``, ``max_restarts``, ``max_task_retries``, ...) the same with options."""

    def options(self, **options: Any) -> ActorClass[P, H_co]: ...

    def remote(self, *args: P.args, **kwargs: P.kwargs) -> H_co: ...


def actor_class(cls: Callable[P, object], *, num_cpus: float) -> ActorClass[P, Any]:
    """``ray.remote(num_cpus=num_cpus)(cls)``: starting it takes ``cls``'s constructor arguments.

    The handle type is Ray's (untyped): annotate the result, ``Learner: ActorClass[[Args, str, str], LearnerHandle]
    = actor_class(_Learner, num_cpus=1)``; mypy checks those constructor arguments against ``cls``.
    """
    remote_cls: ActorClass[P, Any] = ray.remote(num_cpus=num_cpus)(cls)
    return remote_cls


def get(ref: Ref[T], *, timeout: float | None = None) -> T:
    """``ray.get(ref)``: the value, waiting at most ``timeout`` seconds (None: no limit).

    Raises
    ------
    ray.exceptions.GetTimeoutError
        No value within ``timeout``.
    ACTOR_DIED
        The actor died before it returned.
    """
    value: T = ray.get(ref, timeout=timeout)
    return value


def wait(
    refs: Sequence[Ref[T]], *, num_returns: int = 1, timeout: float | None = None
) -> tuple[list[Ref[T]], list[Ref[T]]]:
    """``ray.wait``: ``(ready, not_ready)`` once ``num_returns`` of ``refs`` are ready or ``timeout`` seconds passed."""
    ready, not_ready = ray.wait(list(refs), num_returns=num_returns, timeout=timeout)
    return list(ready), list(not_ready)


def kill(handle: object, *, no_restart: bool = True) -> None:
    """``ray.kill``: end the actor behind ``handle`` (and, with ``no_restart``, keep Ray from restarting it)."""
    ray.kill(handle, no_restart=no_restart)


def get_actor(name: str) -> Any:
    """``ray.get_actor``: the handle of the named actor; the caller annotates its type (a handle Protocol)."""
    return ray.get_actor(name)


def is_initialized() -> bool:
    """``ray.is_initialized()``: whether this process is connected to Ray."""
    return bool(ray.is_initialized())


def init(**options: Any) -> None:
    """``ray.init(**options)``: start a local Ray, or join the cluster at ``address=``."""
    ray.init(**options)


def shutdown() -> None:
    """``ray.shutdown()``: disconnect (and stop the Ray this process started)."""
    ray.shutdown()


def node_ip_address() -> str:
    """The IP address of the node this process runs on (``ray.util.get_node_ip_address``)."""
    return str(ray.util.get_node_ip_address())


ACTOR_DIED: tuple[type[Exception], ...] = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)
"""what :func:`get` raises when the actor died (Ray restarts it if it may): catch as ``except ACTOR_DIED``"""
