"""The status line on stderr while a core starts on the slow backends (``rtl``: MyHDL elaboration and simulation
start, 10-20 s of silence before), and nothing where a core starts at once or with ``--no-progress``."""

import time

import numpy as np

from pynq_rl.host.agents import ppo
from pynq_rl.host.agents.common.startup import core_start_text, starting
from pynq_rl.host.agents.ppo.advantages import compute_gae


def test_starting_shows_what_happens_and_how_long_it_took(capsys):
    with starting("starting the GAE core on rtl (MyHDL elaboration, simulation start)"):
        time.sleep(0.05)
    err = capsys.readouterr().err
    assert err == "starting the GAE core on rtl (MyHDL elaboration, simulation start): ready [00:00]\n"  # one line
    with starting("anything", enabled=False), starting(None):
        pass
    assert capsys.readouterr().err == ""
    assert core_start_text("replay", "verilator") == (
        "starting the replay core on verilator (building or loading the Verilator model)"
    )
    assert core_start_text("GAE", "emu") is None and core_start_text("GAE", "board") is None


class SlowHostGae:
    """Stands in for the rtl GAE core: slow to load, CleanRL's loop to compute."""

    def compute(self, rewards, values, dones, *, gamma, lam, quantize):
        return compute_gae(rewards, values, dones, gamma, lam)


def test_ppo_on_rtl_says_what_it_is_waiting_for(tmp_path, capsys, monkeypatch):
    from pynq_rl.host import overlay

    def load_core(name, backend, board, timeout_s):
        time.sleep(0.1)
        return SlowHostGae()

    monkeypatch.setattr(overlay, "load_core", load_core)
    args = ppo.Args(backend="rtl", nn="numpy", total_timesteps=256, num_envs=2, num_steps=128, out_dir=str(tmp_path))
    summary = ppo.train(args)
    assert summary["global_step"] == 256 and np.isfinite(summary["sps"])
    err = capsys.readouterr().err
    assert "starting the GAE core on rtl (MyHDL elaboration, simulation start): ready [00:00]" in err
