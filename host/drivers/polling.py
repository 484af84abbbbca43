"""Bounded polling: every wait on the PL has a deadline (the stock PYNQ waits loop forever if the PL hangs)."""
from __future__ import annotations

import time
from typing import Callable

__all__ = ["wait_until", "wait_dma_channel"]

_POLL_S = 20e-6


def wait_until(ready: Callable[[], bool], timeout_s: float, describe: Callable[[], str]) -> None:
    """Poll ``ready()`` until it is true; after ``timeout_s`` raise ``TimeoutError`` with ``describe()``."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s} s: {describe()}")
        time.sleep(_POLL_S)


def wait_dma_channel(channel, timeout_s: float, name: str) -> int:
    """Wait for a ``pynq.lib.dma`` simple-mode channel to go idle or fail, within ``timeout_s``.

    Once the channel is idle (or in error) the stock ``channel.wait()`` returns at once: it decodes the error
    bits into PYNQ's messages, invalidates the receive buffer and records ``transferred``, which is returned.

    Raises
    ------
    TimeoutError
        The channel stayed busy for ``timeout_s`` (the PL stopped consuming or producing the stream).
    RuntimeError
        The DMA reported an error (decode, slave or internal error).
    """
    wait_until(lambda: channel.idle or channel.error, timeout_s,
               lambda: f"DMA {name} channel still busy (running={channel.running}, idle={channel.idle}, "
                       f"error={channel.error})")
    channel.wait()
    return channel.transferred
