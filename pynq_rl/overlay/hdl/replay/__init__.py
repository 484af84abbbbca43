"""The replay core (on-chip RMM): a K-ary sum tree with one memory per level (its K banks side by side as
columns), a bottom-up updater and a top-down sampler (see :mod:`.core`)."""
