"""The integration methods, each written once over the primitives of a layout.

A step of dx/dt = f(x) (f = P_x(v), or v itself for layer) ends by renormalising every token:

    euler, layer  x <- x + dt k1 (+ the noise, Euler-Maruyama)                       first order
    rk4           classical RK4: k1 = f(x), k2 = f(x + dt/2 k1), k3 = f(x + dt/2 k2),
                  k4 = f(x + dt k3), x <- x + dt/6 (k1 + 2 k2 + 2 k3 + k4)          fourth order
    heun          explicit trapezoid (improved Euler): k1 = f(x), k2 = f(x + dt k1),
                  x <- x + dt/2 k1 + dt/2 k2                                        second order

The sphere is invariant (and attracting) for the ambient field f, so renormalising keeps each
method's order (docs/integrators.md compares them).

A layout is how a path holds a state: general/integrators.py ([n, d] in x's dtype), rows.py
([d, n]), lanes.py ([n, d, L], one system per lane, and one system's [1, d, n]) and blocked.py
([n, d], BLAS). It is a NamedTuple (a Python object for blocked.py) with fields `method` and
`ws` (stage scratch: ws[0] .. ws[STAGES - 1], each shaped like the state), and registers with
`implement` its primitives:

    velocity(lay, x, k, stage)     k = f(x); stage: which evaluation of the step (0 is at the
                                   step's own start, where a path may reuse what a save left)
    diffuse(lay, x, k, tick)       k += the noise of step number tick over dt (or nothing)
    shift(lay, out, x, frac, k)    out = x + (frac dt) k, elementwise (out may be x)
    rk4_combine(lay, x, k1, k2, k3, k4)    x += (dt / 6) (k1 + 2 k2 + 2 k3 + k4)
    normalise(lay, x)              every moving token onto the sphere

Each primitive is a jitted function compiled with its path's own options, so every path keeps
its own floating-point operations (contraction into fused multiply-adds or not) and its bits;
`step` and the methods hold no arithmetic of their own beyond frac dt, with frac 0.5 or 1
(exact in any mode). They are compiled into each path's caller (inlined: no specialisation
and no call is added); blocked.py calls them as Python, where the primitives registered for
its class are Python callables.
"""

import warnings

from numba import types
from numba.core.errors import NumbaIRAssumptionWarning
from numba.extending import overload, register_jitable

from sweep.kernels.codes import HEUN, RK4

# Numba's internal SSA check flags the names it gives a primitive inlined at several stages
# of one step (it asks for a report, not a change; the compiled code is right: the bits of
# every path are the written-out steps', tests/test_lanes.py); users would see it at compile.
warnings.filterwarnings("ignore", message="variable 'implement__locals__",
                        category=NumbaIRAssumptionWarning)

STAGES = 5  # the scratch states any method uses: rk4's four stages and its trial state
_NAMES = ("velocity", "diffuse", "shift", "rk4_combine", "normalise")
_REGISTERED = {}  # layout class -> its primitives by name, for the Python callers


def velocity(lay, x, k, stage):
    _REGISTERED[type(lay)]["velocity"](lay, x, k, stage)


def diffuse(lay, x, k, tick):
    _REGISTERED[type(lay)]["diffuse"](lay, x, k, tick)


def shift(lay, out, x, frac, k):
    _REGISTERED[type(lay)]["shift"](lay, out, x, frac, k)


def rk4_combine(lay, x, k1, k2, k3, k4):
    _REGISTERED[type(lay)]["rk4_combine"](lay, x, k1, k2, k3, k4)


def normalise(lay, x):
    _REGISTERED[type(lay)]["normalise"](lay, x)


def implement(cls, **primitives) -> None:
    """Layouts of class cls step by these primitives (every name of the module docstring):
    jitted functions for a NamedTuple cls, compiled into the methods' callers; any
    callables for a Python class."""
    if set(primitives) != set(_NAMES):
        raise TypeError(f"{cls.__name__}: the primitives are {', '.join(_NAMES)}")
    _REGISTERED[cls] = primitives
    ours = lambda lay: isinstance(lay, types.BaseNamedTuple) and lay.instance_class is cls  # noqa: E731
    vel, dif, shi, com, nor = (primitives[name] for name in _NAMES)

    @overload(velocity, inline="always")
    def _velocity(lay, x, k, stage):
        if ours(lay):
            return lambda lay, x, k, stage: vel(lay, x, k, stage)

    @overload(diffuse, inline="always")
    def _diffuse(lay, x, k, tick):
        if ours(lay):
            return lambda lay, x, k, tick: dif(lay, x, k, tick)

    @overload(shift, inline="always")
    def _shift(lay, out, x, frac, k):
        if ours(lay):
            return lambda lay, out, x, frac, k: shi(lay, out, x, frac, k)

    @overload(rk4_combine, inline="always")
    def _rk4_combine(lay, x, k1, k2, k3, k4):
        if ours(lay):
            return lambda lay, x, k1, k2, k3, k4: com(lay, x, k1, k2, k3, k4)

    @overload(normalise, inline="always")
    def _normalise(lay, x):
        if ours(lay):
            return lambda lay, x: nor(lay, x)


@register_jitable(inline="always")
def euler(lay, x, tick):
    """euler or layer (the velocity knows which), with the noise of step number tick."""
    k1 = lay.ws[0]
    velocity(lay, x, k1, 0)
    diffuse(lay, x, k1, tick)
    shift(lay, x, x, 1.0, k1)


@register_jitable(inline="always")
def rk4(lay, x):
    """Deterministic only: configs refuse noise with rk4."""
    k1, k2, k3, k4, y = lay.ws[0], lay.ws[1], lay.ws[2], lay.ws[3], lay.ws[4]
    velocity(lay, x, k1, 0)
    shift(lay, y, x, 0.5, k1)
    velocity(lay, y, k2, 1)
    shift(lay, y, x, 0.5, k2)
    velocity(lay, y, k3, 2)
    shift(lay, y, x, 1.0, k3)
    velocity(lay, y, k4, 3)
    rk4_combine(lay, x, k1, k2, k3, k4)


@register_jitable(inline="always")
def heun(lay, x):
    """Deterministic, as rk4; its stages are rk4's first two and trial state."""
    k1, k2, y = lay.ws[0], lay.ws[1], lay.ws[4]
    velocity(lay, x, k1, 0)
    shift(lay, y, x, 1.0, k1)
    velocity(lay, y, k2, 1)
    shift(lay, x, x, 0.5, k1)
    shift(lay, x, x, 0.5, k2)


@register_jitable(inline="always")
def step(lay, x, tick):
    """One step of lay.method of the state x in place, then renormalisation; tick: the step
    number (indexes the noise)."""
    if lay.method == RK4:
        rk4(lay, x)
    elif lay.method == HEUN:
        heun(lay, x)
    else:
        euler(lay, x, tick)
    normalise(lay, x)
