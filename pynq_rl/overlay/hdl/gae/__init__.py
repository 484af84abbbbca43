"""The GAE core (HEPPO) in MyHDL, bit-exact with :mod:`pynq_rl.overlay.models.gae`.

One module per job:

* :mod:`.core` -- the LANES-wide core behind its streams: the register-side signals (``CoreConfig``) and the
  instantiation of everything below;
* :mod:`.control` -- the operation FSM: START and its configuration check, the operation's end, STATUS;
* :mod:`.loader` -- beats into records into FILO stack rows, chunk after chunk (the operation's position);
* :mod:`.compute` -- pops into the PEs and write-backs of one chunk at a time, CYCLES; the PEs' coefficients;
* :mod:`.drain` -- each chunk's results read back newest first and sent as output records;
* :mod:`.ports` -- the stacks' shared write and read ports;
* :mod:`.lane` -- one lane: its stack, :mod:`.dequant` (q8 codes to DATA) and :mod:`.pe` (the processing element);
* :mod:`.params` -- derived widths and the signal bundles the engines hand each other.

The multiply-adds are :mod:`pynq_rl.overlay.hdl.common.mac`'s.
"""
