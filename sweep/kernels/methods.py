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
([d, n]), lanes.py ([n, d, L], one system per lane) and blocked.py
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
and no call is added): `step` is bound, for each layout class, to the method its `method`
field names, with that class's primitives bound as the names the method calls (inlined by
Numba as the method is, never compiled on their own). A layout whose `method` is a kind
(`kind(code)`: a value whose type is the method) compiles that method alone; one whose
`method` is an int compiles all three and picks one at run time. blocked.py calls them as
Python, where the primitives registered for its class are Python callables.
"""

import functools
import warnings
from types import FunctionType
from typing import NamedTuple

from numba import types
from numba.core.errors import NumbaIRAssumptionWarning
from numba.extending import overload

from sweep.kernels.codes import EULER, HEUN, LAYER, RK4
from sweep.numerics._jit import jit_inline

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


def euler(lay, x, tick):
    """euler or layer (the velocity knows which), with the noise of step number tick."""
    k1 = lay.ws[0]
    velocity(lay, x, k1, 0)
    diffuse(lay, x, k1, tick)
    shift(lay, x, x, 1.0, k1)


def rk4(lay, x, tick):
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


def heun(lay, x, tick):
    """Deterministic, as rk4; its stages are rk4's first two and trial state."""
    k1, k2, y = lay.ws[0], lay.ws[1], lay.ws[4]
    velocity(lay, x, k1, 0)
    shift(lay, y, x, 1.0, k1)
    velocity(lay, y, k2, 1)
    shift(lay, x, x, 0.5, k1)
    shift(lay, x, x, 0.5, k2)


class EulerStep(NamedTuple):
    """A method as a type of its own (kind): euler, or layer (code says which)."""

    code: int


class RK4Step(NamedTuple):
    code: int


class HeunStep(NamedTuple):
    code: int


_KINDS = {EULER: EulerStep, LAYER: EulerStep, RK4: RK4Step, HEUN: HeunStep}
_METHODS = {EulerStep: euler, RK4Step: rk4, HeunStep: heun}


def kind(code: int):
    """The method `code` (codes.METHOD_CODES) as a value of its own type: a compiled path
    whose layout holds it as `method` compiles that method's step alone, not all three
    (rk4's stages are most of a path's compile time); an int `method` compiles all three and
    picks one at run time."""
    return _KINDS[code](code)


def method_code(method) -> int:
    """The integer code of a layout's method (an int, or a kind)."""
    return getattr(method, "code", method)


@overload(method_code, inline="always")
def _method_code(method):
    if isinstance(method, types.Integer):
        return lambda method: method
    return lambda method: method.code


def step(lay, x, tick):
    """One step of lay.method of the state x in place, then renormalisation; tick: the step
    number (indexes the noise)."""
    code = method_code(lay.method)
    (rk4 if code == RK4 else heun if code == HEUN else euler)(lay, x, tick)
    normalise(lay, x)


@overload(step, inline="always")
def _step(lay, x, tick):
    method = dict(zip(lay.fields, lay.types))["method"]
    one_of = _compiled(lay.instance_class, getattr(method, "instance_class", None))
    normalise_fn = _REGISTERED[lay.instance_class]["normalise"]

    def stepped(lay, x, tick):
        one_of(lay, x, tick)
        normalise_fn(lay, x)

    return stepped


@functools.cache
def _compiled(cls, kind_class):
    """The method of kind_class (None: any, chosen at run time) for layouts of class cls, its
    primitives bound to cls's as the names it calls, so they are inlined as it is: no
    function of their own (an overload per primitive compiled each first on its own)."""
    names = {**globals(), **_REGISTERED[cls]}
    bound = {kind: jit_inline(FunctionType(fn.__code__, names, fn.__name__))
             for kind, fn in _METHODS.items()}
    if kind_class is not None:
        return bound[kind_class]
    return _any_method(bound[EulerStep], bound[RK4Step], bound[HeunStep])


def _any_method(euler_step, rk4_step, heun_step):
    @jit_inline
    def any_method(lay, x, tick):
        if lay.method == RK4:
            rk4_step(lay, x, tick)
        elif lay.method == HEUN:
            heun_step(lay, x, tick)
        else:
            euler_step(lay, x, tick)

    return any_method
