"""The progress bar's ``ret20`` is the return the run has reached when the bar is drawn: each update redraws the
bar, so the agents set the postfix first (set after, every frame showed the previous rollout's or episode's)."""

import pytest

from pynq_rl.host.agents import ppo, sarsa
from pynq_rl.host.agents.common import run


class RecordingBar:
    """Stands in for tqdm: keeps the postfix each update (a redraw) would show."""

    def __init__(self, *args, **kwargs):
        self.postfix: dict = {}
        self.drawn: list[dict] = []
        RecordingBar.last = self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def close(self):
        pass

    def set_postfix(self, refresh=True, **values):
        self.postfix = values

    def update(self, n=1):
        self.drawn.append(dict(self.postfix))


@pytest.mark.parametrize(
    "module, args",
    [
        (ppo, ppo.Args(backend="host", nn="numpy", total_timesteps=2048, num_envs=4, num_steps=128)),
        (  # CartPole: its episodes' returns differ, where MountainCar's first ones all time out at -200
            sarsa,
            sarsa.Args(
                backend="host",
                env_id="CartPole-v1",
                episodes=5,
                bounds=((-2.4, -3.0, -0.21, -3.5), (2.4, 3.0, 0.21, 3.5)),
                tiling='{"tilings": [{"dims": [0, 1, 2, 3], "tilings": 4, "tiles": 4}]}',
            ),
        ),
    ],
    ids=["ppo", "sarsa"],
)
def test_the_last_frame_shows_the_return_the_closing_line_reports(module, args, tmp_path, monkeypatch):
    monkeypatch.setattr(run, "tqdm", RecordingBar)
    args.out_dir, args.progress = str(tmp_path), True
    summary = module.train(args)
    final = RecordingBar.last.drawn[-1]["ret20"]
    assert final == f"{summary['mean_return_last20']:.1f}", (RecordingBar.last.drawn, summary["mean_return_last20"])
