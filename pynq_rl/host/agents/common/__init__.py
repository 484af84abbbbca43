"""What every agent shares, kept once (CleanRL keeps it in ``cleanrl_utils/``).

The checks of an agent's ``Args`` (:mod:`.checks`, :mod:`.bounds`), the command-line options generated from them
(:mod:`.options`, :mod:`.argparsing`: the ``pynq-rl`` command line and each agent's own ``python -m`` entry share
them, which is why they live here and not beside :mod:`pynq_rl.cli`, which ``host`` never imports), the run directory,
environments, seeding and schedules (:mod:`.run`), checkpoints without pickle (:mod:`.checkpoints`), Ctrl-C handling
(:mod:`.interrupts`) and the lines a run prints while it starts and when it ends (:mod:`.startup`,
:mod:`.summary_line`). Nothing is imported here: each agent imports what it uses.
"""
