"""MyHDL cores of the overlay. Blocks only: no file I/O, no prints (conversion lives in ``pynq_rl/overlay/build``).

Importing the package points MyHDL's call-site lookups at a frame walk (:mod:`.common.myhdl_stack`) before any block
runs: MyHDL's own ``inspect.stack()`` reads source for every frame on the stack at every instance, which made
elaboration and conversion cost a multiple of the design's size times the caller's stack depth (the Pynq-Z2 GAE
core's conversion spent 31 of its 35 s there). The Verilog is the same byte for byte.
"""

from .common import myhdl_stack

myhdl_stack.install()
