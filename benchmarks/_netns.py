"""Emulated hosts on one Linux machine: network namespaces joined by rate-limited veth pairs, with a delay relay.

The Ape-X topology benchmark (``benchmarks/apex_topology.py``) and its tests put the actors, the replay node and the
learner on separate "hosts": one network namespace each, a veth pair from every actor and from the learner to the
replay node (a star around the node the traffic passes through). Traffic never leaves the namespaces the run
creates.

Links: each end of a veth pair gets a ``tc tbf`` qdisc at the link's rate (each direction). The kernel here has no
``sch_netem`` (``tc qdisc add ... netem`` answers "Specified qdisc kind is unknown"), so a one-way delay of 1 ms or
more is added by :class:`DelayRelay`: a TCP relay in the client's namespace that holds every chunk it forwards for
the delay, in each direction (a round trip costs twice the delay); the bytes still cross the shaped veth, whose
kernel counters are what the benchmark reads. What it does not model: TCP's own reaction to a long round trip
(slow start, window growth), since the kernel sees a short one. Delays below 1 ms (the LAN's 50 us) are not added:
a Python relay costs more than that by itself, and the veth + TCP stack already takes tens of microseconds.

Cleanup always runs: :class:`Topology` is a context manager, registers an ``atexit`` hook, and :func:`sweep_stale`
deletes namespaces left by earlier runs whose process is gone (their names carry the prefix :data:`PREFIX` and the
creating process id). Deleting a namespace deletes the veth ends inside it.

Needs root and ``ip``/``tc`` (iproute2); :func:`check_host` says why not otherwise.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

__all__ = [
    "PREFIX",
    "Link",
    "LAN",
    "WAN",
    "PROFILES",
    "check_host",
    "sweep_stale",
    "Topology",
    "DelayRelay",
    "rate_bits",
]

PREFIX = "prlapx"
"""name prefix of every namespace this module creates (then the creating pid, a dash and the host's role)"""


@dataclasses.dataclass(frozen=True)
class Link:
    """A link's shaping, applied on both ends (each direction)."""

    rate: str
    """tc rate, e.g. ``10gbit``"""
    delay: str
    """one-way delay, e.g. ``50us``"""

    def tbf(self) -> list[str]:
        """The ``tc qdisc ... tbf`` arguments: the rate, a burst of 2 ms at that rate (at least 128 KiB, so a GSO
        super-packet passes) and a 100 ms queue."""
        return [
            "tbf",
            "rate",
            self.rate,
            "burst",
            str(max(128 << 10, int(rate_bits(self.rate) / 8 * 2e-3))),
            "latency",
            "100ms",
        ]

    @property
    def delay_s(self) -> float:
        """The one-way delay in seconds."""
        units = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
        for unit in ("us", "ms", "s"):
            if self.delay.endswith(unit):
                return float(self.delay[: -len(unit)]) * units[unit]
        raise ValueError(f"delay must end in us, ms or s, not {self.delay!r}")

    @property
    def relayed(self) -> bool:
        """Whether :class:`DelayRelay` adds the delay (1 ms or more)."""
        return self.delay_s >= 1e-3


def rate_bits(rate: str) -> float:
    """Bits per second of a tc rate such as ``100mbit`` or ``10gbit``."""
    for unit, scale in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)):
        if rate.endswith(unit):
            return float(rate[: -len(unit)]) * scale
    raise ValueError(f"rate must end in gbit, mbit, kbit or bit, not {rate!r}")


LAN = Link("10gbit", "50us")
"""a data-centre link (the paper's cluster): 10 Gbit/s, 50 us one way"""
WAN = Link("100mbit", "10ms")
"""an edge-to-cloud link: 100 Mbit/s, 10 ms one way"""
PROFILES = {"LAN": {"actors": LAN, "learner": LAN}, "WAN": {"actors": LAN, "learner": WAN}}
"""per profile, the actor <-> replay-node links and the replay-node <-> learner link"""


def check_host() -> str | None:
    """None if namespaces can be made here, else the reason (not root, no ``ip`` or ``tc``)."""
    if os.geteuid() != 0:
        return "emulated hosts need root (ip netns, tc): run as root or skip the topology benchmark"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return f"emulated hosts need iproute2's `{tool}` (Debian: apt-get install iproute2)"
    return None


def _tool(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _run(*cmd: str) -> str:
    """Run an iproute2 command; raise ``RuntimeError`` with its stderr when it fails."""
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout


def _namespaces() -> list[str]:
    out = subprocess.run([_tool("ip"), "netns", "list"], capture_output=True, text=True, timeout=30).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale() -> list[str]:
    """Delete the namespaces of earlier runs whose creating process is gone; returns their names."""
    removed = []
    for name in _namespaces():
        if not name.startswith(PREFIX):
            continue
        pid = name[len(PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            subprocess.run([_tool("ip"), "netns", "delete", name], capture_output=True, timeout=30)
            removed.append(name)
    return removed


class Topology:
    """Actors, a replay node and a learner as namespaces, in a star around the replay node.

    Link ``k`` (actor ``k``, or the learner as link ``n_actors``) is ``10.77.k.0/24``: the replay node is
    ``10.77.k.1``, the other end ``10.77.k.2``. Servers on the replay node listen on ``0.0.0.0`` inside its namespace,
    which only these links reach.

    Parameters
    ----------
    n_actors : int
        Actor hosts (1-200).
    actor_link, learner_link : Link
        Shaping of the actor links and of the learner's link.

    Attributes
    ----------
    replay : str
        The replay node's namespace.
    learner : str
        The learner's namespace.
    actors : list of str
        The actors' namespaces.
    learner_ifname : str
        The learner's end of its link (read its ``/sys/class/net/<if>/statistics`` inside the learner namespace).

    Raises
    ------
    PermissionError
        Not root, or no iproute2 (:func:`check_host`).
    """

    def __init__(self, n_actors: int, actor_link: Link = LAN, learner_link: Link = LAN) -> None:
        if not isinstance(n_actors, int) or not 1 <= n_actors <= 200:
            raise ValueError(f"n_actors must be an integer in [1, 200], not {n_actors!r}")
        reason = check_host()
        if reason is not None:
            raise PermissionError(reason)
        self.n_actors, self.actor_link, self.learner_link = n_actors, actor_link, learner_link
        stem = f"{PREFIX}{os.getpid()}-{id(self) & 0xFFFF:04x}"
        self.replay, self.learner = f"{stem}-replay", f"{stem}-learner"
        self.actors = [f"{stem}-actor{k}" for k in range(n_actors)]
        self.learner_ifname = "lrn0"
        self._made: list[str] = []
        self._closed = False

    # -- life cycle ---------------------------------------------------------------------------------------------------
    def __enter__(self) -> Topology:
        atexit.register(self.close)
        try:
            sweep_stale()
            for name in [self.replay, self.learner] + self.actors:
                _run(_tool("ip"), "netns", "add", name)
                self._made.append(name)
                _run(_tool("ip"), "-n", name, "link", "set", "lo", "up")
            for k, actor in enumerate(self.actors):
                self._link(k, actor, f"act{k}", self.actor_link)
            self._link(self.n_actors, self.learner, self.learner_ifname, self.learner_link)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Delete every namespace made (and with them the veth pairs); safe to call twice."""
        if self._closed:
            return
        self._closed = True
        for name in reversed(self._made):
            subprocess.run([_tool("ip"), "netns", "delete", name], capture_output=True, timeout=30)
        self._made.clear()
        atexit.unregister(self.close)

    def _link(self, k: int, peer: str, peer_if: str, link: Link) -> None:
        """The veth pair ``k`` from the replay node (``rep<k>``, 10.77.k.1) to ``peer`` (``peer_if``, 10.77.k.2)."""
        ip, tc, near = _tool("ip"), _tool("tc"), f"rep{k}"
        _run(ip, "link", "add", near, "netns", self.replay, "type", "veth", "peer", "name", peer_if, "netns", peer)
        for ns, ifname, address in ((self.replay, near, f"10.77.{k}.1/24"), (peer, peer_if, f"10.77.{k}.2/24")):
            _run(ip, "-n", ns, "addr", "add", address, "dev", ifname)
            _run(ip, "-n", ns, "link", "set", ifname, "up")
            _run(ip, "netns", "exec", ns, tc, "qdisc", "add", "dev", ifname, "root", *link.tbf())

    # -- addresses and processes --------------------------------------------------------------------------------------
    def replay_address(self, k: int) -> str:
        """The replay node's address as seen from link ``k`` (actor ``k``; the learner is link ``n_actors``)."""
        return f"10.77.{k}.1"

    def learner_replay_address(self) -> str:
        """The replay node's address as seen from the learner."""
        return self.replay_address(self.n_actors)

    def command(self, namespace: str, *argv: str) -> list[str]:
        """``argv`` run inside ``namespace`` (``ip netns exec``: it also mounts that namespace's /sys)."""
        if namespace not in self._made:
            raise ValueError(f"{namespace!r} is not a namespace of this topology")
        return [_tool("ip"), "netns", "exec", namespace, *argv]

    def interface_bytes(self, namespace: str, ifname: str) -> dict[str, int]:
        """``rx_bytes`` and ``tx_bytes`` of ``ifname`` in ``namespace`` (the kernel's counters)."""
        out = _run(
            *self.command(
                namespace,
                "cat",
                f"/sys/class/net/{ifname}/statistics/rx_bytes",
                f"/sys/class/net/{ifname}/statistics/tx_bytes",
            )
        )
        rx, tx = (int(x) for x in out.split())
        return {"rx_bytes": rx, "tx_bytes": tx}


class DelayRelay:
    """A TCP relay that forwards ``listen`` -> ``target`` and holds every chunk ``delay_s`` in each direction.

    Run it in the client's namespace (``python _netns.py --relay LISTEN_PORT HOST:PORT DELAY_S``, which prints
    ``relaying`` once it listens); the client connects to ``127.0.0.1:LISTEN_PORT``. Chunks keep their order; a
    connection closed at one end is closed at the other after the delay.
    """

    def __init__(self, listen_port: int, target: str, delay_s: float) -> None:
        self.listen_port, self.delay_s = int(listen_port), float(delay_s)
        self.host, port = target.rsplit(":", 1)
        self.port = int(port)

    async def _pipe(self, reader, writer) -> None:
        import asyncio

        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()

        async def send() -> None:
            while True:
                due, data = await queue.get()
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    writer.close()
                    return
                writer.write(data)
                await writer.drain()

        sender = asyncio.create_task(send())
        try:
            while True:
                data = await reader.read(1 << 18)
                queue.put_nowait((loop.time() + self.delay_s, data))
                if not data:
                    break
            await sender
        except (ConnectionError, OSError):
            sender.cancel()
            writer.close()

    async def _handle(self, client_reader, client_writer) -> None:
        import asyncio

        try:
            server_reader, server_writer = await asyncio.open_connection(self.host, self.port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            self._pipe(client_reader, server_writer), self._pipe(server_reader, client_writer), return_exceptions=True
        )

    def serve_forever(self) -> None:
        """Listen on ``127.0.0.1:listen_port`` and relay until killed."""
        import asyncio

        async def run() -> None:
            server = await asyncio.start_server(self._handle, "127.0.0.1", self.listen_port)
            print("relaying", flush=True)
            async with server:
                await server.serve_forever()

        asyncio.run(run())


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 5 or sys.argv[1] != "--relay":
        sys.exit("usage: python _netns.py --relay LISTEN_PORT HOST:PORT DELAY_S")
    DelayRelay(int(sys.argv[2]), sys.argv[3], float(sys.argv[4])).serve_forever()
