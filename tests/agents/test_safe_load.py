"""Model files cannot run code: every loading path meets a payload that writes a marker
file when unpickled; the marker must stay absent and the load must refuse clearly or
load safely. Each test first shows (``trusted`` / plain ``torch.load``) that the payload
is live, so a test cannot pass because the payload is broken."""

from __future__ import annotations

import base64
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from agents.common.adapter import load_model, load_scheduler  # noqa: E402
from agents.pretrained.registry import PRETRAINED_DIR, card  # noqa: E402
from agents.common.safe_load import UnsafeModelError, load_sb3, serialized_entries  # noqa: E402

SHIPPED = PRETRAINED_DIR / "google-hybrid.zip"


class Payload:
    """Unpickling it writes ``marker`` and gives the value of the expression ``value``."""

    def __init__(self, marker: Path, value: str = "None") -> None:
        self.marker = str(marker)
        self.value = value

    def __reduce__(self):
        return (eval, (f"[open({self.marker!r}, 'w').write('ran'), {self.value}][1]",))


def _b64(marker: Path, value: str = "None") -> str:
    return base64.b64encode(pickle.dumps(Payload(marker, value))).decode()


def _rewrite_zip(src: Path, dst: Path, edit) -> Path:
    """Copy an SB3 zip with its ``data`` JSON passed through ``edit``."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            raw = zin.read(item.filename)
            if item.filename == "data":
                d = json.loads(raw)
                edit(d)
                raw = json.dumps(d).encode()
            zout.writestr(item, raw)
    return dst


def _with_meta(path: Path) -> Path:
    c = card("google-hybrid")
    (path.parent / "agent.json").write_text(json.dumps({"algo": c["algo"], "env": c["env"]}))
    return path


def test_shipped_sb3_model_loads_safely_with_the_same_decisions():
    """The shipped google-hybrid model loads with nothing unpickled and acts as the
    plain (pickle) load does on 200 random observations and masks."""
    assert set(serialized_entries(SHIPPED)) >= {"policy_class", "policy_kwargs", "observation_space"}
    safe = load_model(SHIPPED, "maskable_ppo")
    plain = load_model(SHIPPED, "maskable_ppo", trusted=True)
    assert safe.observation_space == plain.observation_space and safe.action_space == plain.action_space
    rng = np.random.default_rng(0)
    obs = rng.uniform(-1, 1, (200, *safe.observation_space.shape)).astype(np.float32)
    mask = rng.random((200, safe.action_space.n)) < 0.5
    mask[:, -1] = True
    a = safe.predict(obs, action_masks=mask, deterministic=True)[0]
    b = plain.predict(obs, action_masks=mask, deterministic=True)[0]
    assert np.array_equal(a, b)


def test_payload_in_a_rebuilt_entry_never_runs(tmp_path):
    """A payload in ``policy_kwargs`` (rebuilt from its text): safe load works, marker absent."""
    marker = tmp_path / "ran"

    def edit(d):
        d["policy_kwargs"][":serialized:"] = _b64(
            marker, "dict(net_arch=[128, 128], activation_fn=__import__('torch').nn.Tanh)")

    bad = _rewrite_zip(SHIPPED, tmp_path / "m.zip", edit)
    model = load_model(bad, "maskable_ppo")
    assert not marker.exists()
    assert model.policy_kwargs["net_arch"] == [128, 128]
    load_model(bad, "maskable_ppo", trusted=True)  # the payload is live
    assert marker.exists()


@pytest.mark.parametrize("how", ["extra-key", "class-text", "policy-module", "space-kind"])
def test_payload_that_cannot_be_rebuilt_is_refused(tmp_path, how):
    """Entries outside the rebuild rules are refused by name (scheduler path included)."""
    marker = tmp_path / "ran"

    def edit(d):
        if how == "extra-key":
            d["evil"] = {":type:": "<class 'object'>", ":serialized:": _b64(marker)}
        elif how == "class-text":
            d["policy_kwargs"]["activation_fn"] = "<class 'os.system'>"
            d["policy_kwargs"][":serialized:"] = _b64(marker)
        elif how == "policy-module":
            d["policy_class"]["__module__"] = "evil.policies"
            d["policy_class"][":serialized:"] = _b64(marker)
        else:
            d["observation_space"][":type:"] = "<class 'evil.Space'>"
            d["observation_space"][":serialized:"] = _b64(marker)

    bad = _with_meta(_rewrite_zip(SHIPPED, tmp_path / "m.zip", edit))
    field = {"extra-key": "evil", "class-text": "activation_fn", "policy-module": "policy_class",
             "space-kind": "observation_space"}[how]
    with pytest.raises(UnsafeModelError, match=field) as e:
        load_scheduler(str(bad))
    assert "m.zip" in str(e.value)
    assert not marker.exists()


def test_resume_from_checkpoint_is_safe(tmp_path):
    """``AgentConfig.build`` with a checkpoint (resumed training) refuses a payload too."""
    from agents.sb3.agent import AgentConfig

    marker = tmp_path / "ran"
    bad = _rewrite_zip(SHIPPED, tmp_path / "m.zip",
                       lambda d: d.__setitem__("evil", {":type:": "x", ":serialized:": _b64(marker)}))
    with pytest.raises(UnsafeModelError, match="evil"):
        AgentConfig(checkpoint=str(bad)).build(env=None)
    assert not marker.exists()


def test_not_a_model_file_is_named(tmp_path):
    """A file that is no zip, or a zip without ``data``, is refused with its name."""
    p = tmp_path / "x.zip"
    p.write_text("hello")
    with pytest.raises(UnsafeModelError, match="x.zip.*not a zip"):
        load_model(p, "ppo")
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("other", "1")
    with pytest.raises(UnsafeModelError, match="no 'data'"):
        load_model(p, "ppo")
    with pytest.raises(FileNotFoundError, match="nope.zip"):
        load_sb3(tmp_path / "nope.zip", object)


def _residual_with_payload(tmp_path: Path) -> tuple[Path, Path]:
    import torch

    marker = tmp_path / "ran"
    src = PRETRAINED_DIR / "hetero-small.pt"
    d = torch.load(src, map_location="cpu", weights_only=True)
    d["config"] = Payload(marker)
    bad = tmp_path / "r.pt"
    torch.save(d, bad)
    assert not marker.exists()
    return bad, marker


def test_residual_payload_never_runs(tmp_path):
    """``load_residual`` and ``ship_residual`` refuse a ``.pt`` that holds an object."""
    import torch

    from agents.pretrained.registry import machine, ship_residual
    from agents.residual.network import load_residual

    bad, marker = _residual_with_payload(tmp_path)
    with pytest.raises(UnsafeModelError, match="r.pt.*weights-only"):
        load_residual(bad)
    with pytest.raises(UnsafeModelError, match="r.pt"):
        ship_residual(bad, "hetero-small", "cmd", 1.0, machine(), dest=tmp_path / "out")
    assert not marker.exists() and not (tmp_path / "out" / "hetero-small.pt").exists()
    torch.load(bad, map_location="cpu", weights_only=False)  # the payload is live
    assert marker.exists()
