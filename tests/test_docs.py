"""What a clone of the repository needs: the simulation rules and the licence inside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# files whose owners still cite DESIGN.md (to be pointed at docs/semantics.md)
_PENDING_DESIGN_REFS: set[str] = set()


def _tracked_text_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout
        paths = [ROOT / p for p in out.splitlines()]
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [p for p in paths if p.suffix in {".py", ".md", ".toml", ".yaml", ".txt", ".cfg"}
            and p.is_file()]


def test_license_is_the_mit_license_pyproject_promises():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 hetgym developers" in text
    assert "THE SOFTWARE IS PROVIDED \"AS IS\"" in text
    assert re.search(r'^license = "MIT"$', (ROOT / "pyproject.toml").read_text(), re.M)


def test_semantics_page_covers_the_rules():
    text = (ROOT / "docs" / "semantics.md").read_text()
    for heading in ("Time and events", "The scheduler's part", "Rate of a running job",
                    "Preemption, grace periods, checkpoints and restarts", "Energy",
                    "Invariants", "Metrics"):
        assert f"## {heading}" in text, heading
    for word in ("restart_delay", "checkpoint_interval", "max_preemptions", "StalledRunWarning",
                 "scaling_exponent", "topology_coeff", "cpu_slot_cores", "pue"):
        assert word in text, word


def test_no_reference_outside_the_repository():
    """Nothing cites ../shared/DESIGN.md (absent from a clone); the README points to the page."""
    offenders = []
    for p in _tracked_text_files():
        rel = p.relative_to(ROOT).as_posix()
        if rel == "tests/test_docs.py":
            continue
        text = p.read_text(errors="replace")
        if "shared/DESIGN" in text or ("DESIGN.md" in text and rel not in _PENDING_DESIGN_REFS):
            offenders.append(rel)
    assert offenders == []
    assert "docs/semantics.md" in (ROOT / "README.md").read_text()


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (outside code blocks)."""
    out: set[str] = set()
    seen: dict[str, int] = {}
    inside = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            inside = not inside
            continue
        m = None if inside else re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_relative_links_in_the_docs_resolve():
    """Every relative link of README.md, BENCHMARKS.md and docs/*.md names a file of the
    checkout and, with a #fragment, one of its headings."""
    broken = []
    for md in [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = re.sub(r"```.*?```", "", md.read_text(), flags=re.S)
        text = re.sub(r"`[^`\n]*`", "", text)  # inline code is not a link either
        for target in re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, frag = target.partition("#")
            dest = (md.parent / path) if path else md
            if not dest.exists():
                broken.append(f"{md.name}: {target}")
            elif frag and dest.suffix == ".md" and frag not in _anchors(dest):
                broken.append(f"{md.name}: {target} (no such heading)")
    assert broken == []


def test_readme_and_envs_page_list_every_registered_env():
    import gymnasium as gym

    import hetgym  # noqa: F401  (registers the ids)

    ids = [i for i in gym.registry if i.startswith("HetCluster")]
    assert len(ids) >= 4
    for page in ("README.md", "docs/envs.md"):
        rows = [ln for ln in (ROOT / page).read_text().splitlines() if ln.startswith("| `")]
        for env_id in ids:
            assert any(ln.startswith(f"| `{env_id}` |") for ln in rows), (page, env_id)


def test_readme_tour_runs(capsys):
    """The README's tour (its first Python block) runs as written."""
    text = (ROOT / "README.md").read_text()
    block = text.split("## A 21-line tour", 1)[1].split("```python\n", 1)[1].split("\n```", 1)[0]
    assert len(block.splitlines()) == 21
    namespace: dict = {}
    exec(compile(block, "README.md (tour)", "exec"), namespace)
    assert namespace["place"].unwrapped.spec.id == "HetClusterPlacement-v0"
    assert namespace["vec"].num_envs == 64
    assert "hetero-small" in capsys.readouterr().out


#: work-log marks that must not come back: machine paths, tracker numbers, pass labels,
#: and labels of a specification the repository does not ship (mechanism ids like M4,
#: assumption ids like A-H1, worked-example ids like T-3, "stage-2 spec", "spec 4.7")
_LOG_MARKS = {
    "machine path": re.compile(r"/work/"),
    "tracker number": re.compile(r"\b[Ii]ssues? ?#?\d+\b|(?<![\w&/#])#\d{1,4}\b(?![\w-])"),
    "pass label": re.compile(r"\b(third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
                             r"thirteenth|fourteenth|fifteenth|sixteenth|\d+(st|nd|rd|th)) pass\b"
                             r"|\b[Ss]top \d+\b|\b[Pp]ass \d+\b(?!:)|\b[Rr]ound \d+ of (the )?(work|review)\b"),
    "spec label": re.compile(r"\bM(1[0-7]|[1-9])\b|\bA-[HAT](\d+|\*)|(?<![\w-])(G|H|T|Ti|A)-[1-9](?![\w-])"
                             r"|\bstage[- ]?2\b|\bstage2\b|\bspec(ification)?\b ?(§|sec\.?|section|\d|[A-Z]+-\d)"
                             r"|\bthe spec's\b|\bASSUMPTION\b"),
}

#: legitimate text the patterns would catch: tensor shapes (A-1 = candidates minus one)
#: and a NodeSpec field
_ALLOWED = ("(B, A-1", "the spec's ``gpu_socket``")


def test_no_work_log_marks_in_the_repository():
    """No machine paths, tracker numbers, work-pass labels or spec labels in any text file."""
    hits = []
    for p in _tracked_text_files() + [p for p in ROOT.glob("agents/pretrained/*.json")]:
        rel = p.relative_to(ROOT).as_posix()
        if rel == "tests/test_docs.py":
            continue
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            for allowed in _ALLOWED:
                line = line.replace(allowed, "")
            for what, pat in _LOG_MARKS.items():
                if pat.search(line):
                    hits.append(f"{rel}:{n}: {what}: {line.strip()[:80]}")
    assert hits == []


def test_marks_are_recognised():
    """The patterns above catch what they are for and spare ordinary text."""
    assert _LOG_MARKS["machine path"].search("see /work/shared/data")
    assert _LOG_MARKS["tracker number"].search("(issue 9, start-up)")
    assert _LOG_MARKS["tracker number"].search("fixed in #14")
    assert _LOG_MARKS["pass label"].search("after the thirteenth pass")
    for label in ("forking (M4)", "(A-H10)", "A-T1 ... A-T9", "worked example G-2", "Ti-1:",
                  "stage-2 spec", "spec stage2 §3.7", "spec 4.7", "spec sec. 5.1", "spec H-3",
                  "the spec's proposal", "ASSUMPTION, docs"):
        assert _LOG_MARKS["spec label"].search(label), label
    assert _LOG_MARKS["pass label"].search("measured in pass 3")
    assert not any(p.search(text) for p in _LOG_MARKS.values()
                   for text in ("a second pass over the queue, colour #ff0000, 8 GPUs",
                                "mix M-5 of hadar-aws", "round 0: 10 s sync", "pass 1: device types",
                                "HetCluster-v0, NodeSpec(gpus=4)", "the A100 and the T4",
                                "sec. 5.2.2, Fig. 8", "a JobSpec"))


def test_reference_docs_stay_short_and_indexed():
    assert len((ROOT / "BENCHMARKS.md").read_text().splitlines()) < 400
    assert len((ROOT / "docs" / "agents.md").read_text().splitlines()) < 500
    index = (ROOT / "docs" / "index.md").read_text()
    missing = [p.name for p in sorted((ROOT / "docs").glob("*.md"))
               if p.name != "index.md" and f"]({p.name})" not in index]
    assert missing == []
