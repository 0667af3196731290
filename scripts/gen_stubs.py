#!/usr/bin/env python3
"""Regenerate the type stubs of the native extension, python/kubetune/_kubetune/*.pyi.

Usage (after building the extension into python/kubetune, e.g. scripts/build.sh):
    .venv/bin/pip install pybind11-stubgen      # only needed here; CI uses the committed stubs
    .venv/bin/python scripts/gen_stubs.py       # rewrites python/kubetune/_kubetune/
    .venv/bin/python -m pytest -q tests/python/test_typing.py   # mypy + stubtest over the result

pybind11-stubgen writes one .pyi per native (sub)module from the bindings' signatures. Where a binding takes or
returns JSON-like data it can only say `typing.Any`; the hand-written members in scripts/stub_overrides/<module>.pyi
(TypedDicts, Literals, the pure-Python helpers that kubetune.study installs on Study) replace the generated member
of the same name, member by member inside classes, and are appended when the bindings lack them.
"""
from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "python" / "kubetune" / "_kubetune"
OVERRIDES = ROOT / "scripts" / "stub_overrides"
# Defaults that are C++ objects print as `<... object at 0x...>`; stubgen writes them as `...`, which is right.
STUBGEN_ARGS = ["--ignore-invalid-expressions", r"<.*>|kubetune::.*",
                "--ignore-unresolved-names", r"RunningTrial|Callback|pd\.DataFrame",
                "--enum-class-locations", "Aggregation:kubetune._kubetune.autoscale"]


def _start(node: ast.stmt) -> int:
    """First line of a statement, decorators included (1-based)."""
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])


def _name(node: ast.stmt) -> str | None:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    return None


def _merge_body(lines: list[str], edits: list[tuple[int, int, str]], gen_body: list[ast.stmt],
                ovr_body: list[ast.stmt], ovr_lines: list[str], append_at: int) -> None:
    """Queue edits so that each named member of ovr_body replaces gen_body's members of that name."""
    text = lambda n: "".join(ovr_lines[_start(n) - 1:n.end_lineno])  # noqa: E731
    gen_classes = {n.name: n for n in gen_body if isinstance(n, ast.ClassDef)}
    done: set[str] = set()
    for node in ovr_body:
        name = _name(node)
        if name is None or name in done:
            continue
        group = [n for n in ovr_body if _name(n) == name]          # every overload of the name
        done.add(name)
        if isinstance(node, ast.ClassDef) and name in gen_classes:
            cls = gen_classes[name]
            _merge_body(lines, edits, cls.body, node.body, ovr_lines, cls.end_lineno)
            continue
        old = [n for n in gen_body if _name(n) == name]
        new = "".join(text(n) for n in group)
        if old:
            edits.append((_start(old[0]) - 1, old[0].end_lineno, new))
            edits.extend((_start(n) - 1, n.end_lineno, "") for n in old[1:])
        else:
            edits.append((append_at, append_at, new))


def merge(generated: str, override: str) -> str:
    gen, ovr = ast.parse(generated), ast.parse(override)
    lines, ovr_lines = generated.splitlines(keepends=True), override.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    _merge_body(lines, edits, gen.body, ovr.body, ovr_lines, len(lines))
    for begin, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        lines[begin:end] = [new]
    imports = [ast.get_source_segment(override, n) for n in ovr.body
               if isinstance(n, (ast.Import, ast.ImportFrom)) and getattr(n, "module", "") != "__future__"]
    out = "".join(lines)
    head = "from __future__ import annotations\n"
    return out.replace(head, head + "".join(f"{i}\n" for i in imports), 1)


def tidy(text: str) -> str:
    """pybind11 idioms that mypy rejects in a stub: a `None` default on a non-optional parameter, and
    `__hash__ = None` on classes that define `__eq__`."""
    text = re.sub(r"(\w+): ([\w.]+) = None\b", r"\1: \2 | None = None", text)
    return text.replace("__hash__: typing.ClassVar[None] = None", "__hash__: typing.ClassVar[None]  # type: ignore[assignment]")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        env_path = str(ROOT / "python")
        subprocess.run([sys.executable, "-m", "pybind11_stubgen", "kubetune._kubetune", "-o", tmp, *STUBGEN_ARGS],
                       check=True, env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"})
        out = Path(tmp) / "kubetune" / "_kubetune"
        for stub in sorted(out.glob("*.pyi")):
            override = OVERRIDES / stub.name
            if override.exists():
                stub.write_text(merge(stub.read_text(), override.read_text()))
            text = tidy(stub.read_text())
            stub.write_text("# Generated by scripts/gen_stubs.py from the bindings; edit scripts/stub_overrides.\n"
                            + text)
        shutil.rmtree(TARGET, ignore_errors=True)
        shutil.copytree(out, TARGET)
    print(f"wrote {sorted(p.name for p in TARGET.glob('*.pyi'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
