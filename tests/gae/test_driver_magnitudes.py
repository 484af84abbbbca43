"""The GAE driver's float32 results across float32's normal range: the 8-bit modes scale each block to its own
magnitude, so their error bound is relative to it. Apart from ``test_driver.py``, which the pynq-compat rung runs
under older pynq releases in venvs that hold only pytest (no hypothesis)."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pynq_rl.overlay.models import gae as model
from tests.gae.harness import rollout


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(exponent=st.integers(-37, 30), quantize=st.sampled_from(["runs", "block"]), seed=st.integers(0, 2**16))
def test_8_bit_results_keep_the_error_bound_across_float32s_normal_range(overlay, exponent, quantize, seed):
    """The 8-bit modes scale each block to its own magnitude, so the error bound is relative to it: from float32's
    smallest normals to its largest advantages, the float32 results stay within ``error_bound`` of float64 GAE (one
    block's bound covers the runs too: a run's SCALE is at most the block's) plus their rounding to float32."""
    rewards, values, dones = rollout(seed, 40, 3)
    r64, v64 = rewards.astype(np.float64) * 10.0**exponent, values.astype(np.float64) * 10.0**exponent
    adv, ret = overlay.gae.compute(r64, v64, dones, quantize=quantize)
    ref_adv, ref_ret = model.gae_float64(r64, v64, dones, 0.99, 0.95)
    spec = overlay.gae.spec
    unit = model.choose_unit(float(max(np.abs(r64).max(), np.abs(v64).max())), 0.99, 0.95, spec.data)
    r_err, v_err = model.encode_q8(r64, unit, spec).error, model.encode_q8(v64, unit, spec).error
    delta_max = np.abs(r64).max() + 1.99 * np.abs(v64).max()
    adv_max = max(np.abs(ref_adv).max(), np.abs(v64).max())
    bound = model.error_bound(spec, 0.99, 0.95, unit, r_err, v_err, delta_max, adv_max)
    rounding = 2.0**-24 * (max(np.abs(ref_adv).max(), np.abs(ref_ret).max()) + bound)  # half a float32 ulp
    assert np.abs(adv - ref_adv).max() <= bound + rounding
    assert np.abs(ret - ref_ret).max() <= bound + rounding
