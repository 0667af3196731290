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
import json
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


# --- typed keyword arguments from the C++ settings tables (issue #19) ---------------------------------------------
# Searcher and pruner classes take **kwargs at runtime (the C++ table validates them) and expose the table as
# `_settings_schema()`. This section turns each table into a typed keyword-only __init__ (and the TPE presets'
# signatures), merged into __init__.pyi like an override, before scripts/stub_overrides/ is applied.
_SETTINGS_PRESETS = ("optuna", "hyperopt")  # static methods taking the same keywords (TPE.optuna(**overrides))
_SETTINGS_DUMP = """
import json, kubetune._kubetune as m
out = {}
for name in dir(m):
    cls = getattr(m, name)
    if isinstance(cls, type) and "_settings_schema" in vars(cls):
        out[name] = {"schema": cls._settings_schema(),
                     "presets": [p for p in %r if p in vars(cls)]}
print(json.dumps(out))
""" % (_SETTINGS_PRESETS,)


def _settings_param(entry: dict, with_default: bool = True) -> str:
    kind, default = entry["type"], entry["default"]
    if entry.get("choices") and entry.get("exact"):
        kind = "typing.Literal[" + ", ".join(repr(c) for c in entry["choices"]) + "]"
    if kind.startswith("dict["):  # None (the default) or a mapping
        kind, default = kind + " | None", None
    if entry.get("required"):
        return f"{entry['name']}: {kind}"
    return f"{entry['name']}: {kind} = {repr(default) if with_default else '...'}"


def settings_overrides(env: dict) -> str:
    """Override text (for __init__.pyi) with one typed __init__ per class that has a settings table."""
    dump = subprocess.run([sys.executable, "-c", _SETTINGS_DUMP], check=True, env=env, capture_output=True,
                          text=True).stdout
    lines: list[str] = []
    for cls, info in sorted(json.loads(dump).items()):
        schema = [e for e in info["schema"] if not e.get("ignored")]
        positional = [_settings_param(e) for e in schema if e.get("positional")]
        keywords = [_settings_param(e) for e in schema if not e.get("positional")]
        params = ", ".join(["self", *positional, "*", *keywords]) if keywords else ", ".join(["self", *positional])
        lines += [f"class {cls}:",
                  f"    def __init__({params}) -> None:",
                  '        """Settings as listed in the class docstring (from the C++ settings table)."""']
        for preset in info["presets"]:
            kw = ", ".join(["*", *(_settings_param(e, False) for e in schema)])
            lines += ["    @staticmethod", f"    def {preset}({kw}) -> {cls}: ..."]
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        env_path = str(ROOT / "python")
        subprocess.run([sys.executable, "-m", "pybind11_stubgen", "kubetune._kubetune", "-o", tmp, *STUBGEN_ARGS],
                       check=True, env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"})
        out = Path(tmp) / "kubetune" / "_kubetune"
        init = out / "__init__.pyi"
        init.write_text(merge(init.read_text(), settings_overrides({"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"})))
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
