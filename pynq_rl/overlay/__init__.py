"""The hardware side of pynq-rl: spec, fixed-point arithmetic, bit-exact models, HDL and build flow."""
