"""MyHDL cores of the overlay. Blocks only: no file I/O, no prints (conversion lives in ``pynq_rl/overlay/build``)."""
