"""Tile-coded linear Sarsa learning inside the ParSa core (OPaL's in-network Sarsa): the agent's public face.

``from pynq_rl.host.agents import sarsa; sarsa.train(sarsa.Args(...))`` is the API (``pynq-rl train sarsa`` calls
it). :mod:`.training` holds the arguments, the tile coding's defaults, checkpoints and the episode loop;
:mod:`.learners` the float64 host reference and the ParSa core behind one interface; :mod:`.netdemo` OPaL's use case,
per-flow DDoS mitigation, as a small gymnasium task with its own command line.
"""

from .training import (
    BOUNDS,
    Args,
    FloatSarsa,
    SarsaLearner,
    check_args,
    default_tiling,
    env_bounds,
    evaluate,
    load_checkpoint,
    make_learner,
    run_episode,
    save_checkpoint,
    train,
)

__all__ = [
    "Args",
    "BOUNDS",
    "check_args",
    "FloatSarsa",
    "SarsaLearner",
    "make_learner",
    "default_tiling",
    "env_bounds",
    "run_episode",
    "evaluate",
    "save_checkpoint",
    "load_checkpoint",
    "train",
]
