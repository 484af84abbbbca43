"""MyHDL cores of the overlay. Blocks only: no file I/O, no prints (conversion lives in ``pynq_rl/overlay/build``).

Importing the package fixes two costs MyHDL charges for process-wide state, before any block runs (the Verilog and
the simulations are the same with or without them):

- its call-site lookups walk frames (:mod:`.common.myhdl_stack`): MyHDL's own ``inspect.stack()`` reads source for
  every frame on the stack at every instance, which made elaboration and conversion cost a multiple of the design's
  size times the caller's stack depth (the Pynq-Z2 GAE core's conversion spent 31 of its 35 s there);
- its registry of signals keeps only the live ones (:mod:`.common.myhdl_signals`): MyHDL walks every signal ever
  made at the start and end of each simulation and keeps every memory of every design it elaborated alive, so a
  process that had elaborated the full-size cores ran a small simulation ten times slower or more.
"""

from .common import myhdl_signals, myhdl_stack

myhdl_stack.install()
myhdl_signals.install()
