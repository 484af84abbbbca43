"""The ParSa model's inner loop: one batch of state records through tile coding, action choice and Sarsa updates.

Plain integer code over flat arrays, so numba compiles it unchanged (:func:`compiled_act_loop`) and, interpreted,
it is the reference path (:class:`~pynq_rl.overlay.models.parsa.ParsaModel` picks one). The arithmetic is the
ParSa core's, documented where the model is (:mod:`pynq_rl.overlay.models.parsa`).
"""

from __future__ import annotations

import numpy as np

try:  # numba is optional: the numpy path gives identical bits where no wheel exists
    import numba as _numba
except ImportError:  # pragma: no cover - exercised on machines without numba
    _numba = None  # type: ignore[assignment]  # compiled_act_loop is only called when HAVE_NUMBA

__all__ = ["HAVE_NUMBA", "act_loop", "compiled_act_loop"]

HAVE_NUMBA = _numba is not None
"""whether numba imported (:func:`compiled_act_loop` needs it)"""


def act_loop(
    params,
    offsets,
    scales,
    d_worker,
    d_ndims,
    d_dims,
    d_tiles,
    d_nt,
    d_shift,
    d_base,
    banks,
    key_valid,
    key_action,
    key_q,
    key_rows,
    pending_valid,
    pending_reward,
    keys,
    flags,
    rewards,
    states,
    actions,
    explored,
    q_values,
    q_chosen,
    stats,
):
    """The record loop, records strictly in order (each may update the weights the next one reads).

    Plain integer code: numba compiles it unchanged (``use_numba``), and interpreted it is the reference path.
    The vectorized :meth:`ParsaModel.positions` / :meth:`ParsaModel.rows` recompute the tile coding independently
    (tests compare them with the rows this loop stores per key).
    """
    n_dims, n_actions, alpha, gamma = params[0], params[1], params[2], params[3]
    epsilon, decay, online, state = params[4], params[5], params[6], params[7]
    value_w, cf, busiest = params[8], params[9], params[10]
    act_depth, update_depth, record_words = params[11], params[12], params[13]
    lo = -(1 << (value_w - 1))
    hi = (1 << (value_w - 1)) - 1
    half = 1 << (cf - 1)
    n_desc = d_worker.shape[0]
    n_keys = key_valid.shape[0]
    cycles = 0
    for r in range(keys.shape[0]):
        key = keys[r]
        cycles += record_words
        if key < 0 or key >= n_keys:
            stats[1] += 1
            continue
        terminal = (flags[r] >> 1) & 1
        has_reward = 0
        reward = 0
        if flags[r] & 1:
            raw = rewards[r]
            reward = min(max(raw, lo), hi)
            if reward != raw:
                stats[0] = 1
            has_reward = 1
        elif pending_valid[key]:
            reward = pending_reward[key]
            has_reward = 1
        pending_valid[key] = 0
        # map: every tiling's row; reduce: q(s, .) summed over tilings, saturated
        rows = np.empty(n_desc, dtype=np.int64)
        acc = np.zeros(n_actions, dtype=np.int64)
        for i in range(n_desc):
            index = 0
            for j in range(d_ndims[i]):
                d = d_dims[i, j]
                diff = min(max(states[r, d] - offsets[d], 0), (1 << 31) - 1)
                u = min((diff * scales[d]) >> 24, 65535)
                index = index * d_nt[i] + ((u * d_tiles[i] + d_shift[i]) >> 16)
            rows[i] = d_base[i] + index
            for a in range(n_actions):
                acc[a] += banks[d_worker[i], rows[i], a]
        for a in range(n_actions):
            q = min(max(acc[a], lo), hi)
            if q != acc[a]:
                stats[0] = 1
            q_values[r, a] = q
        cycles += n_dims + busiest + act_depth
        chosen = 0
        chosen_q = 0
        if not terminal:
            state ^= (state << 13) & 0xFFFFFFFF
            state ^= state >> 17
            state ^= (state << 5) & 0xFFFFFFFF
            if (state & 0xFFFF) < epsilon:
                chosen = ((state >> 16) * n_actions) >> 16
                explored[r] = 1
            else:
                best = q_values[r, 0]
                for a in range(1, n_actions):
                    if q_values[r, a] > best:
                        best = q_values[r, a]
                        chosen = a
            chosen_q = q_values[r, chosen]
            epsilon = (epsilon * decay) >> cf  # truncated: decays to 0
            actions[r] = chosen
            q_chosen[r] = chosen_q
        # Sarsa update of the key's previous state-action, with q(s', a') from before the update
        stats[4] = 0
        if online and has_reward and key_valid[key]:
            if terminal:
                raw_delta = reward - key_q[key]
            else:
                raw_delta = reward + ((gamma * chosen_q + half) >> cf) - key_q[key]
            delta = min(max(raw_delta, lo), hi)
            if delta != raw_delta:
                stats[0] = 1
            increment = (alpha * delta + half) >> cf
            a_prev = key_action[key]
            for i in range(n_desc):
                old = banks[d_worker[i], key_rows[key, i], a_prev]
                new = min(max(old + increment, lo), hi)
                if new != old + increment:
                    stats[0] = 1
                banks[d_worker[i], key_rows[key, i], a_prev] = new
            stats[2] += 1
            stats[4] = busiest + update_depth
            cycles += busiest + update_depth
        if terminal:
            key_valid[key] = 0
        else:
            key_valid[key] = 1
            key_action[key] = chosen
            key_q[key] = chosen_q
            for i in range(n_desc):
                key_rows[key, i] = rows[i]
    stats[3] = cycles
    params[4] = epsilon
    params[7] = state


_compiled: dict = {}


def compiled_act_loop():
    """:func:`act_loop` compiled by numba (once per process; needs :data:`HAVE_NUMBA`)."""
    if "act" not in _compiled:
        _compiled["act"] = _numba.njit(nogil=True)(act_loop)
    return _compiled["act"]
