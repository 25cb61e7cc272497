"""What every call of the package checks first: the backend's name (the runtime's table), integer
arguments within the range the core takes, numbers that must be numbers, flags that must be bools,
and the dtypes of results."""

from __future__ import annotations

import functools
import numbers
import operator

import numpy as np

from . import _backends, _core

# The names backend= takes: "auto", then the runtime's backends in the order "auto" tries them
# (read once; check_backend() reads the table again before it refuses a name).
BACKENDS = tuple(_core.backends())


def check_backend(backend) -> str:
    """backend, if it is one of multireduce.backends(); else ValueError naming every one."""
    if backend in BACKENDS:
        return backend
    names = tuple(_core.backends())
    if isinstance(backend, str) and backend in names:
        return backend
    raise ValueError(f"backend must be one of {', '.join(repr(n) for n in names)}, not {backend!r}")


def devices_of(devices, backend: str):
    """(device ordinals, backend) of a devices= call: None leaves both as they are; "all" is every
    device of the backend that splits jobs over several (the runtime's table: _backends.splitting);
    a list names its devices (a number may repeat: two workers on one GPU). Host data then runs on
    those devices ("auto" becomes that backend). ValueError for an empty list, a bad number
    (negative, past int32), no such device at all or a backend that numbers no devices (the CPU);
    the core refuses a device that does not exist and a job that does not split."""
    if devices is None:
        return (), backend
    named = _backends.entry(backend)
    if named is not None and not named.device_noun:
        raise ValueError(f"devices= names GPUs, and backend={backend!r} runs on {named.noun}")
    owner = _backends.splitting(backend)
    into = owner.name if owner is not None and backend == "auto" else backend
    if isinstance(devices, str):
        if devices != "all":
            raise ValueError(f"devices must be 'all' or a list of GPU numbers, not {devices!r}")
        count = _core.device_count(owner.name) if owner is not None else 0
        if count == 0:
            noun = owner.device_noun if owner is not None else "device that splits a job"
            raise ValueError(f"devices='all': there is no {noun} here")
        return tuple(range(count)), into
    try:
        ordinals = tuple(integer(d, "a device") for d in devices)
    except TypeError:
        raise TypeError(f"devices must be 'all' or a list of GPU numbers, not {type(devices).__name__}") from None
    if not ordinals:
        raise ValueError("devices is empty: name at least one GPU")
    if any(d < 0 for d in ordinals):
        raise ValueError(f"devices must be GPU numbers (0 or more), not {list(ordinals)}")
    if any(d > INT32_MAX for d in ordinals):  # (the core takes C ints)
        raise ValueError(f"devices must be GPU numbers from 0 to 2**31 - 1, not {list(ordinals)}")
    return ordinals, into


def integer(value, name: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None


INT64_MAX = (1 << 63) - 1
INT32_MAX = (1 << 31) - 1


def bounded(value, name: str, low: int, high: int) -> int:
    """An integer argument within [low, high] (the range the compiled core takes); TypeError for
    what is not an integer, ValueError naming the range otherwise."""
    v = integer(value, name)
    if not low <= v <= high:
        def text(b):
            return "2**63 - 1" if b == INT64_MAX else "2**31 - 1" if b == INT32_MAX else str(b)

        raise ValueError(f"{name} must be an integer from {text(low)} to {text(high)}, got {v}")
    return v


def real(value, name: str) -> float:
    """A number argument (int or float, not a string or a bool) as a float; TypeError otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    return float(value)


def flag(value, name: str) -> bool:
    """A True/False argument (a bool or a NumPy bool, not a string or a number); TypeError otherwise."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, not {value!r}")
    return bool(value)


@functools.lru_cache(maxsize=None)
def result_dtype(op: str, dtype: str) -> str:
    """The result's dtype name (raises for bad pairs, which are never cached)."""
    return _core.result_dtype(op, dtype)
