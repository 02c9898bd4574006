"""Other libraries are used through their public, documented APIs only, and our own modules
through each other's public names. Read from the source (nothing is imported), every module of
domain/, projections/, planledger/, bench/ and tests/ must not:

- import a name starting with `_` (`from x import _y`), or a module path with a component
  starting with `_` (`import x._y`; `__future__` and `__main__` aside);
- reach an attribute starting with one underscore on anything but `self`/`cls`
  (`obj._thing`, `getattr(obj, "_thing")`) unless this module defines that name;
- touch pydantic's internals (`__pydantic_*__`) or reach around a decorator (`__wrapped__`,
  `inspect.unwrap`);
- define a method starting with one underscore in a class built on a class of another package
  (eventsourcing, mcp, acp, asyncio, textual, uvicorn, starlette...), where it overrides, or
  may one day override, that package's private method; nor use `self._thing` there unless
  this module defines `_thing` (the base's private state).

Where no public way exists, the adapter kept is named in ALLOWED_SUBCLASSES or
ALLOWED_INTERNALS, with why.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("domain", "projections", "planledger", "bench", "tests")
EXEMPT_MODULES = frozenset({"__future__", "__main__"})
FORBIDDEN_DUNDER = re.compile(r"__(pydantic_\w+|wrapped)__")
# Names starting with an underscore that their library documents as its public API: where.
DOCUMENTED_UNDERSCORED = {
    "_asdict": "collections.namedtuple",
    "_field_defaults": "collections.namedtuple",
    "_fields": "collections.namedtuple",
    "_make": "collections.namedtuple",
    "_replace": "collections.namedtuple",
    "_exit": "os._exit",
    "_missing_": "enum",
    "_generate_next_value_": "enum",
    # eventsourcing's docs (Domain models, "Creating new aggregates"): the "private" class
    # method a subclass's public create() calls.
    "_create": "eventsourcing.domain.BaseAggregate",
}
# Bases that bring no private methods of their own to collide with.
NEUTRAL_BASES = frozenset({"typing", "typing_extensions", "abc", "builtins"})
# Subclasses of another package's class allowed their private helpers: (path, class) -> why.
ALLOWED_SUBCLASSES = {
    ("planledger/clients/http/serving.py", "HeadDeadlineProtocol"): (
        "uvicorn has no public deadline for a request head (its timeout_keep_alive runs only "
        "between requests): the HTTP/1.1 protocol is extended with helpers of its own "
        "(_await_head, _head_received, _make_room), none of them uvicorn's"
    ),
}

# Modules allowed pydantic's internals: path -> why.
ALLOWED_INTERNALS = {
    "domain/models.py": (
        "built(): a model made without validation by writing its four slots; pydantic's public "
        "model_construct costs five times as much (+20% CPU per event in a rebuild, +12% in a "
        "verify; pydantic/pydantic#10536)"
    ),
}


@dataclass(frozen=True)
class Hit:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


HitAt = Callable[[ast.AST, str], Hit]


def single_underscored(name: str) -> bool:
    """`_name`, not `__dunder__` (a name-mangled `__name` counts as private too)."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@dataclass
class Module:
    path: Path
    name: str  # dotted, from the repository root
    tree: ast.Module
    imports: dict[str, str] = field(default_factory=dict)  # local name -> dotted origin
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)  # top-level classes
    defined: set[str] = field(default_factory=set)  # underscored names this module defines

    @property
    def relative(self) -> str:
        return self.path.relative_to(ROOT).as_posix()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def absolute(module: Module, level: int, target: str | None) -> str:
    """The dotted name a (possibly relative) `from` import names."""
    if level == 0:
        return target or ""
    package = module.name.split(".")
    if module.path.name != "__init__.py":
        package.pop()
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, target] if target else base)


def read(path: Path) -> Module:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module = Module(path, module_name(path), tree)
    module.classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    module.imports[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    module.imports[root] = root
        elif isinstance(node, ast.ImportFrom):
            origin = absolute(module, node.level, node.module)
            for alias in node.names:
                module.imports[alias.asname or alias.name] = f"{origin}.{alias.name}"
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            module.defined.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            module.defined.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            module.defined.add(node.attr)
        elif isinstance(node, ast.arg):
            module.defined.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            module.defined.add(node.arg)  # a name given to a constructor of ours
    for node in ast.walk(tree):  # `__slots__ = ("_a", ...)`
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__slots__" for target in node.targets
        ):
            module.defined.update(
                item.value
                for item in ast.walk(node.value)
                if isinstance(item, ast.Constant) and isinstance(item.value, str)
            )
    return module


class Project:
    def __init__(self, modules: list[Module]) -> None:
        self.modules = {module.name: module for module in modules}

    def own(self, dotted: str, importer: Module) -> bool:
        """Whether `dotted` names one of our modules (or something in one)."""
        top = dotted.split(".")[0]
        if top in SCANNED or not top:
            return True
        sibling = importer.path.parent / f"{top}.py"  # a script's neighbour (bench/common.py)
        return sibling.exists() or (importer.path.parent / top / "__init__.py").exists()

    def origin(self, node: ast.expr, module: Module) -> str | None:
        """The dotted origin of a base-class expression (None: not an import)."""
        if isinstance(node, ast.Subscript):
            return self.origin(node.value, module)
        if isinstance(node, ast.Attribute):
            inner = self.origin(node.value, module)
            return f"{inner}.{node.attr}" if inner else None
        if isinstance(node, ast.Name):
            if node.id in module.imports:
                return module.imports[node.id]
            if node.id in module.classes:
                return f"{module.name}.{node.id}"
        return None

    def foreign_base(self, module: Module, cls: ast.ClassDef, seen: frozenset[str]) -> str | None:
        """The class of another package `cls` is built on, directly or through ours."""
        for base in cls.bases:
            dotted = self.origin(base, module)
            if dotted is None or dotted in seen:
                continue
            if not self.own(dotted, module):
                if dotted.split(".")[0] not in NEUTRAL_BASES:
                    return dotted
                continue
            found = self.project_class(dotted, module)
            if found is not None:
                owner, node = found
                deeper = self.foreign_base(owner, node, seen | {dotted})
                if deeper is not None:
                    return deeper
        return None

    def project_class(self, dotted: str, importer: Module) -> tuple[Module, ast.ClassDef] | None:
        """Our class named `dotted`, followed through re-exports (at most a few hops)."""
        for _ in range(5):
            module_part, _, name = dotted.rpartition(".")
            owner = self.modules.get(module_part)
            if owner is None and importer.path.parent.name == "bench":
                owner = self.modules.get(f"bench.{module_part}")
            if owner is None:
                return None
            if name in owner.classes:
                return owner, owner.classes[name]
            if name not in owner.imports:
                return None
            dotted = owner.imports[name]
        return None


def hits_in(module: Module, project: Project) -> Iterator[Hit]:
    path = module.relative

    def hit(node: ast.AST, what: str) -> Hit:
        return Hit(path, getattr(node, "lineno", 0), what)

    def internal(name: str) -> bool:
        return path not in ALLOWED_INTERNALS and FORBIDDEN_DUNDER.fullmatch(name) is not None

    def private_reach(owner: ast.expr, name: str, node: ast.AST) -> Iterator[Hit]:
        if internal(name):
            yield hit(node, f"`{name}`: pydantic's internals, or around a decorator")
        elif (
            single_underscored(name)
            and name not in module.defined
            and name not in DOCUMENTED_UNDERSCORED
            and not (isinstance(owner, ast.Name) and owner.id in {"self", "cls"})
        ):
            yield hit(node, f"`.{name}`: a private attribute of another module")

    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from private_module(alias.name, node, hit)
        elif isinstance(node, ast.ImportFrom):
            yield from private_module(node.module or "", node, hit)
            for alias in node.names:
                if single_underscored(alias.name) or FORBIDDEN_DUNDER.fullmatch(alias.name):
                    yield hit(node, f"imports private `{alias.name}` from {node.module or '.'}")
                if alias.name == "unwrap" and node.module == "inspect":
                    yield hit(node, "imports inspect.unwrap: reaches around a decorator")
        elif isinstance(node, ast.Attribute):
            yield from private_reach(node.value, node.attr, node)
            if (
                node.attr == "unwrap"
                and isinstance(node.value, ast.Name)
                and module.imports.get(node.value.id) == "inspect"
            ):
                yield hit(node, "inspect.unwrap: reaches around a decorator")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in {"getattr", "setattr", "hasattr", "delattr"} and len(node.args) > 1:
                name = node.args[1]
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    yield from private_reach(node.args[0], name.value, node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if internal(node.value):
                yield hit(node, f"{node.value!r}: pydantic's internals, or around a decorator")
        elif isinstance(node, ast.Name) and internal(node.id):
            yield hit(node, f"`{node.id}`: pydantic's internals, or around a decorator")
        elif isinstance(node, ast.ClassDef):
            yield from subclass_hits(module, project, node, hit)


def private_module(dotted: str, node: ast.AST, hit: HitAt) -> Iterator[Hit]:
    if dotted in EXEMPT_MODULES:
        return
    private = [part for part in dotted.split(".") if part.startswith("_")]
    if private:
        yield hit(node, f"imports private module {dotted}")


def subclass_hits(module: Module, project: Project, cls: ast.ClassDef, hit: HitAt) -> Iterator[Hit]:
    base = project.foreign_base(module, cls, frozenset())
    if base is None or (module.relative, cls.name) in ALLOWED_SUBCLASSES:
        return
    for node in cls.body:
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and single_underscored(node.name)
            and node.name not in DOCUMENTED_UNDERSCORED
        ):
            yield hit(node, f"{cls.name}.{node.name}: a private method in a {base}")
    for used in ast.walk(cls):
        if (
            isinstance(used, ast.Attribute)
            and isinstance(used.value, ast.Name)
            and used.value.id in {"self", "cls"}
            and single_underscored(used.attr)
            and used.attr not in module.defined  # (a pydantic PrivateAttr, say, is ours)
            and used.attr not in DOCUMENTED_UNDERSCORED
        ):
            yield hit(used, f"{cls.name}: `self.{used.attr}`, private state of a {base}")


def scanned_files() -> list[Path]:
    return sorted(
        path
        for top in SCANNED
        for path in (ROOT / top).rglob("*.py")
        if "__pycache__" not in path.parts and ".venv" not in path.parts
    )


def all_hits() -> list[Hit]:
    modules = [read(path) for path in scanned_files()]
    project = Project(modules)
    return sorted(
        {hit for module in modules for hit in hits_in(module, project)},
        key=lambda hit: (hit.path, hit.line, hit.what),
    )


def test_every_library_is_used_through_its_public_api() -> None:
    hits = all_hits()
    assert not hits, "reaches into private APIs:\n" + "\n".join(map(str, hits))
