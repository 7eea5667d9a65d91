"""The observables: records (one declaration per results variable, no Numba) and the kernels
that compute them from a state, shared by every path of sweep.kernels."""
