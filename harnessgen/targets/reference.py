"""What a program computes, said in Python: a reference its SDFG is checked against.

A ``Reference`` wraps a function that takes the program's containers (NumPy arrays) and the
size symbols it needs by parameter name and writes its outputs in place, as the program does:
the NumPy references of our ``kernels``, or a user's ``@dace.program`` run as plain Python
(``python_reference``: its size symbols bound to numbers; where the function uses what only
DaCe understands, running it fails and the check says so instead of judging).
"""
from __future__ import annotations

import dataclasses
import inspect
import types
from typing import Callable, Dict, Iterable

import numpy as np

from ..core.errors import Unsupported
from .dialect import plain_function


@dataclasses.dataclass
class Reference:
    label: str                      # how reports name it (kernels:gemm, file.py:function)
    function: Callable
    # what the function runs beyond its own code (a file it loads when called), as a key
    identity: str = ""
    # another implementation of what the program computes (NPBench's NumPy version), not the
    # program itself: it judges the program on the program's own inputs alone (``Program.
    # own_inputs``), for two implementations may part ways on inputs their benchmark never
    # feeds (all values equal: NumPy's histogram widens an empty range, the port divides by
    # zero), which says nothing of DaCe
    independent: bool = False

    def run(self, arrays: Dict[str, np.ndarray], symbols: Dict[str, int], scalars: Iterable[str] = ()) -> Dict:
        """Copies of ``arrays`` after the reference ran on them. ``scalars``: containers the
        program takes by value (they travel as 1-element buffers). Raises ``Unsupported`` where
        the function cannot run on them."""
        scalars = set(scalars)
        out = {name: value.copy() for name, value in arrays.items()}
        args = {}
        for name, parameter in inspect.signature(self.function).parameters.items():
            if name in symbols:
                args[name] = symbols[name]
            elif name in out:
                args[name] = out[name].reshape(-1)[0] if name in scalars else out[name]
            elif parameter.default is not inspect.Parameter.empty:
                continue              # a constant of the reference's own (crc16's polynomial)
            else:
                raise Unsupported(f"reference {self.label}: no container or symbol {name!r} in the program")
        try:
            with np.errstate(all="ignore"):
                returned = self.function(**args)
        except Exception as exc:  # noqa: BLE001 -- the reference cannot say: not a verdict on the program
            raise Unsupported(f"reference {self.label} did not run: {type(exc).__name__}: {exc}") from exc
        out.update(returned_containers(returned, out))
        return out


def returned_containers(returned, containers: Dict) -> Dict[str, np.ndarray]:
    """What a function returned, as the containers DaCe returns it in: ``__return`` for one
    value, ``__return_0``, ``__return_1``... for a tuple (those of them the program has, each
    shaped and typed as the program's container). A returned value is an output of the program
    like any container it writes."""
    if returned is None or not any(name.startswith(RETURN) for name in containers):
        return {}                 # (a NumPy version that returns what the program writes in place)
    values = {RETURN: returned} if RETURN in containers or not isinstance(returned, tuple) else {}
    if isinstance(returned, tuple) and not values:
        values = {f"{RETURN}_{i}": value for i, value in enumerate(returned)}
    out = {}
    for name, value in values.items():
        if name not in containers:
            raise Unsupported(f"the reference returns a value the program has no container {name} for")
        like = containers[name]
        out[name] = np.asarray(value).astype(like.dtype, copy=False).reshape(like.shape)
    return out


# the container DaCe returns a program's value in (``__return_<i>`` for each of a tuple's values)
RETURN = "__return"


def python_reference(program) -> Reference:
    """A ``@dace.program`` as plain Python: its function, DaCe's dialect made plain
    (``dialect.plain_function``: explicit maps as loops, memlets as reads and writes), with the
    size symbols bound to the values of each call (they are ``dace.symbol`` objects in its
    module)."""
    function = program.f
    label = f"{function.__module__}:{function.__name__}" if hasattr(function, "__module__") else function.__name__

    def run(**kwargs):
        plain = _plain(function)
        sizes = {k: v for k, v in kwargs.items() if k in _symbol_names(function)}
        names = {**plain.__globals__, **{k: int(v) for k, v in sizes.items()}}
        bound = types.FunctionType(plain.__code__, names, plain.__name__, plain.__defaults__, plain.__closure__)
        return bound(**{k: v for k, v in kwargs.items() if k not in sizes})

    parameters = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY)
                  for n in list(inspect.signature(function).parameters) + sorted(_symbol_names(function))]
    run.__signature__ = inspect.Signature(parameters)
    return Reference(label, run)


def _plain(function):
    """The function with DaCe's dialect made plain (a construct with none raises Unsupported)."""
    try:
        return plain_function(function)
    except Unsupported:
        raise
    except Exception as exc:  # noqa: BLE001 -- the rewrite failed: the reference cannot say
        raise Unsupported(f"DaCe's dialect in {function.__name__} has no plain meaning here: "
                          f"{type(exc).__name__}: {exc}") from exc


def _symbol_names(function) -> set:
    """The names of the ``dace.symbol`` globals the function's code reads."""
    import dace

    return {name for name in function.__code__.co_names
            if isinstance(function.__globals__.get(name), dace.symbolic.symbol)}
