"""Load model files without running code from them.

A Stable-Baselines3 ``.zip`` keeps its policy weights in ``.pth`` entries (tensors, read
by SB3 with ``torch.load(weights_only=True)``) and its settings in a ``data`` JSON entry
whose non-JSON values are cloudpickled (``{":serialized:": <base64>, ...}``); unpickling
such an entry runs whatever the file's author put there. :func:`load_sb3` reads ``data``
as plain JSON first and hands SB3 a replacement (``custom_objects``) for *every*
serialized entry, rebuilt from the plain text that SB3 writes beside each pickle (class
names, shapes, schedule values) or from the caller, so that nothing is unpickled:

=========================  ==========================================================
entry                      rebuilt as
=========================  ==========================================================
``policy_class``           the algorithm's ``MlpPolicy`` class (its module must match)
``policy_kwargs``          ``net_arch`` and the classes named in the text, from
                           :data:`KNOWN_CLASSES` only (activations, ``SetEncoder``)
``observation_space``      ``Box`` from dtype, shape and bounds (or the ``env``'s)
``action_space``           ``Discrete(n, start)`` (or the ``env``'s)
schedules                  ``ConstantSchedule(val=x)`` read as ``x``; any other
                           schedule as the caller's value (default: a constant 0,
                           harmless for inference)
training buffers           ``None`` (SB3 rebuilds them when training starts)
=========================  ==========================================================

An entry that none of these rules covers, a class outside :data:`KNOWN_CLASSES` or a
policy class of another module is refused with :class:`UnsafeModelError` (a
``ValueError``), unless the caller passes ``trusted=True`` (then SB3 loads the file as
it is: only for files you made). :func:`load_torch` reads a ``.pt`` with
``torch.load(weights_only=True)``: tensors, dicts, lists and numbers only.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

__all__ = ["KNOWN_CLASSES", "UnsafeModelError", "load_sb3", "load_torch", "safe_objects", "serialized_entries"]


class UnsafeModelError(ValueError):
    """A model file holds something that cannot be loaded without running its code."""


#: Classes a checkpoint's ``policy_kwargs`` may name (as SB3's text ``<class 'module.Name'>``).
KNOWN_CLASSES = {
    **{f"torch.nn.modules.activation.{n}": ("torch.nn", n)
       for n in ("Tanh", "ReLU", "ELU", "LeakyReLU", "GELU", "SiLU", "Sigmoid", "Softplus", "Mish")},
    "agents.sb3.policies.SetEncoder": ("agents.sb3.policies", "SetEncoder"),
    # the name in checkpoints written while the class lived in agents/policies.py
    "agents.policies.SetEncoder": ("agents.sb3.policies", "SetEncoder"),  # layout: keep
    "stable_baselines3.common.torch_layers.FlattenExtractor": ("stable_baselines3.common.torch_layers",
                                                               "FlattenExtractor"),
}

#: Training-time buffers: replaced by None (SB3 rebuilds them when ``learn`` starts).
_BUFFERS = ("_last_obs", "_last_episode_starts", "_last_original_obs", "ep_info_buffer",
            "ep_success_buffer", "rollout_buffer_class", "env")
#: Schedules and the settings they come from.
_SCHEDULES = ("learning_rate", "lr_schedule", "clip_range", "clip_range_vf")

_CLASS_TEXT = re.compile(r"^<class '([A-Za-z_][\w.]*)'>$")
_CONSTANT = re.compile(r"^ConstantSchedule\(val=([-+0-9.eEinfa]+)\)$")


def serialized_entries(path: str | Path) -> dict[str, dict[str, Any]]:
    """The cloudpickled entries of an SB3 ``.zip``'s ``data`` (read as JSON, nothing unpickled)."""
    p = Path(path)
    try:
        with zipfile.ZipFile(p) as z:
            if "data" not in z.namelist():
                raise UnsafeModelError(f"{p}: not a Stable-Baselines3 model (no 'data' entry in the zip)")
            text = z.read("data").decode("utf-8")
    except zipfile.BadZipFile as e:
        raise UnsafeModelError(f"{p}: not a zip file (expected a Stable-Baselines3 model .zip)") from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UnsafeModelError(f"{p}: its 'data' entry is not JSON ({e})") from e
    if not isinstance(data, dict):
        raise UnsafeModelError(f"{p}: its 'data' entry is not a JSON object")
    return {k: v for k, v in data.items() if isinstance(v, dict) and ":serialized:" in v}


def _known_class(text: Any, where: str) -> Any:
    import importlib

    m = _CLASS_TEXT.match(text) if isinstance(text, str) else None
    if m is None or m.group(1) not in KNOWN_CLASSES:
        raise UnsafeModelError(f"{where}: {text!r} is not one of the classes a model may name "
                               f"({sorted(KNOWN_CLASSES)}); load with trusted=True only if you made the file")
    module, name = KNOWN_CLASSES[m.group(1)]
    return getattr(importlib.import_module(module), name)


def _policy_kwargs(entry: dict[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in entry.items():
        if k in (":type:", ":serialized:"):
            continue
        if k.endswith("_class") or k.endswith("_fn"):
            out[k] = _known_class(v, f"{where}[{k!r}]")
        elif k in ("net_arch", "features_extractor_kwargs", "share_features_extractor", "ortho_init",
                   "normalize_images") and not isinstance(v, str):
            out[k] = v
        else:
            raise UnsafeModelError(f"{where}[{k!r}]: cannot be rebuilt from the file's text ({v!r}); "
                                   "load with trusted=True only if you made the file")
    return out


def _array(text: Any, shape: tuple[int, ...], dtype: Any, where: str) -> Any:
    import numpy as np

    if isinstance(text, str) and "..." not in text:
        try:
            vals = np.array([float(x) for x in text.replace("[", " ").replace("]", " ").split()], dtype=dtype)
        except ValueError:
            vals = None
        if vals is not None and vals.size in (1, int(np.prod(shape))):
            return np.broadcast_to(vals, shape).copy() if vals.size == 1 else vals.reshape(shape)
    raise UnsafeModelError(f"{where}: bounds {str(text)[:60]!r} cannot be read back; pass the env "
                           "(its observation space is used) or load with trusted=True")


def _space(key: str, entry: dict[str, Any], where: str) -> Any:
    import numpy as np
    from gymnasium import spaces

    kind = entry.get(":type:")
    if kind == "<class 'gymnasium.spaces.discrete.Discrete'>":
        return spaces.Discrete(int(entry["n"]), start=int(entry.get("start", 0)))
    if kind == "<class 'gymnasium.spaces.box.Box'>":
        shape = tuple(int(x) for x in entry["_shape"])
        dtype = np.dtype(str(entry["dtype"]))
        low = _array(entry.get("low"), shape, dtype, f"{where}.low")
        high = _array(entry.get("high"), shape, dtype, f"{where}.high")
        return spaces.Box(low=low, high=high, shape=shape, dtype=dtype)
    raise UnsafeModelError(f"{where}: a {kind} cannot be rebuilt (Box and Discrete can); "
                           "pass the env or load with trusted=True")


def _schedule(entry: dict[str, Any]) -> float:
    text = entry.get("value_schedule", "")
    m = _CONSTANT.match(text) if isinstance(text, str) else None
    return float(m.group(1)) if m else 0.0


def safe_objects(path: str | Path, algo_cls: Any, env: Any = None,
                 overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """SB3 ``custom_objects`` that replace every serialized entry of the model file ``path``.

    Args:
        path: The ``.zip``.
        algo_cls: Its SB3 class (``MaskablePPO``, ``PPO``).
        env: The env the model is loaded for (its spaces replace the file's), or None.
        overrides: Values the caller gives for serialized entries (the schedules of a
            resumed run); they win over the rebuilt ones.

    Raises:
        UnsafeModelError: An entry that cannot be rebuilt from plain text.
    """
    overrides = dict(overrides or {})
    out: dict[str, Any] = {}
    for key, entry in serialized_entries(path).items():
        where = f"{Path(path)}: data[{key!r}]"
        if key in overrides:
            out[key] = overrides[key]
        elif key == "policy_class":
            cls = algo_cls.policy_aliases["MlpPolicy"]
            if entry.get("__module__") != cls.__module__:
                raise UnsafeModelError(f"{where}: a policy from module {entry.get('__module__')!r}; "
                                       f"expected {cls.__module__!r} ({cls.__name__})")
            out[key] = cls
        elif key == "policy_kwargs":
            out[key] = _policy_kwargs(entry, where)
        elif key in ("observation_space", "action_space"):
            out[key] = getattr(env, key) if env is not None else _space(key, entry, where)
        elif key in _SCHEDULES:
            out[key] = _schedule(entry)
        elif key in _BUFFERS:
            out[key] = None
        else:
            raise UnsafeModelError(f"{where}: a pickled {entry.get(':type:')} that cannot be rebuilt "
                                   "from the file's text; load with trusted=True only if you made the file")
    out.setdefault("policy_class", algo_cls.policy_aliases["MlpPolicy"])
    return out


def load_sb3(path: str | Path, algo_cls: Any, env: Any = None, device: str = "cpu", trusted: bool = False,
             overrides: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    """``algo_cls.load(path)`` with every pickled entry replaced (:func:`safe_objects`).

    Args:
        path: The ``.zip``.
        algo_cls: Its SB3 class.
        env: Env to attach (its spaces are used), or None.
        device: Torch device.
        trusted: Load the file as it is, pickles included (only for files you made).
        overrides: Values for serialized entries (win over the rebuilt ones).
        kwargs: Passed to ``algo_cls.load``.
    """
    if not Path(path).is_file():
        raise FileNotFoundError(f"model file {path} does not exist")
    custom = None if trusted else safe_objects(path, algo_cls, env=env, overrides=overrides)
    return algo_cls.load(str(path), env=env, device=device, custom_objects=custom, **kwargs)


def load_torch(path: str | Path) -> Any:
    """``torch.load(path, weights_only=True)`` on the CPU, with an error naming the file."""
    import pickle

    import torch

    try:
        return torch.load(Path(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        raise UnsafeModelError(f"{path}: holds objects other than tensors, dicts, lists and numbers; "
                               f"refused (weights-only load): {str(e).splitlines()[0]}") from e
