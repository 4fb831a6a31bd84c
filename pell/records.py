"""Records: pellc's data classes, declared as with dataclasses but cheaper to create.

`@record` (frozen) and `@record(frozen=False)` take the place of
`@dataclass(frozen=True, slots=True)` and `@dataclass(slots=True)`: the fields are the class's
annotations after its bases' fields, with defaults and `field(...)` as in dataclasses, and the
class gets `__slots__`, `__init__`, `__match_args__`, `__eq__`, `__hash__` and `__repr__` with
dataclass's semantics. Creating a dataclass costs about a millisecond at import (it compiles
each generated method and imports `inspect`); pellc has some 150 of them, so its start-up paid
about 0.15 s for them. Here eq, hash and repr are the same few functions for every record,
reading the fields through an attrgetter made per class, and `__init__` is made on the class's
first instantiation, from source compiled once per shape (how many fields, which are keyword-only
or made by a factory) and given the class's names and defaults, so that it runs as fast as one
written by hand (`self.x = x`; compiling one per class would cost about 0.1 ms each).

Differences from dataclasses:
- a frozen record is frozen for mypy only (`dataclass_transform` tells it the semantics): at
  run time its `__init__` assigns the fields plainly and nothing stops an assignment, which
  is what makes building a large tree fast;
- `eq`, `repr` and `frozen` are the only options; there is no `order`, `init`, `unsafe_hash`,
  `__post_init__`, `InitVar` or `weakref_slot`; `field()` takes `default`, `default_factory`,
  `repr`, `compare` and `kw_only`;
- as with `dataclass(slots=True)` the class is made again with `__slots__`, so its methods
  must not use zero-argument `super()`; records pickle by their slots (protocol 2 and up).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from operator import attrgetter
from types import CodeType, FunctionType
from typing import Any, TypeVar, dataclass_transform, overload

_T = TypeVar("_T")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # no default given


class Field:
    """One field of a record, as `fields()` gives it."""

    __slots__ = ("compare", "default", "default_factory", "kw_only", "name", "repr", "type")

    def __init__(
        self, default: Any, default_factory: Any, repr: bool, compare: bool, kw_only: bool
    ) -> None:
        self.name = ""
        self.type: Any = None  # the annotation: a string under `from __future__ import annotations`
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare
        self.kw_only = kw_only

    def __repr__(self) -> str:
        return (
            f"Field(name={self.name!r}, type={self.type!r}, default={self.default!r}, "
            f"default_factory={self.default_factory!r}, repr={self.repr}, "
            f"compare={self.compare}, kw_only={self.kw_only})"
        )


@overload
def field(*, default: _T, repr: bool = True, compare: bool = True, kw_only: bool = False) -> _T: ...
@overload
def field(
    *,
    default_factory: Callable[[], _T],
    repr: bool = True,
    compare: bool = True,
    kw_only: bool = False,
) -> _T: ...
@overload
def field(*, repr: bool = True, compare: bool = True, kw_only: bool = False) -> Any: ...
def field(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    repr: bool = True,
    compare: bool = True,
    kw_only: bool = False,
) -> Any:
    """A field's default, or the function making one per instance, and how it takes part."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, repr, compare, kw_only)


def fields(record_or_class: object) -> tuple[Field, ...]:
    """The fields of a record class or instance, in order."""
    try:
        found: tuple[Field, ...] = record_or_class.__record_fields__  # type: ignore[attr-defined]
    except AttributeError:
        raise TypeError(f"{record_or_class!r} is not a record or record class") from None
    return found


def replace(obj: _T, /, **changes: Any) -> _T:
    """A new record of `obj`'s class with `obj`'s values but for `changes`."""
    for declared in fields(obj):
        if declared.name not in changes:
            changes[declared.name] = getattr(obj, declared.name)
    return obj.__class__(**changes)


@overload
def record(cls: type[_T], /) -> type[_T]: ...
@overload
def record(
    *, frozen: bool = True, eq: bool = True, repr: bool = True
) -> Callable[[type[_T]], type[_T]]: ...
@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def record(
    cls: type[_T] | None = None, /, *, frozen: bool = True, eq: bool = True, repr: bool = True
) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """Make `cls` a record (see the module's docstring)."""
    if cls is None:
        return lambda cls: _make(cls, frozen, eq, repr)
    return _make(cls, frozen, eq, repr)


def _make(cls: type[_T], frozen: bool, eq: bool, repr: bool) -> type[_T]:
    namespace = dict(cls.__dict__)
    declared: dict[str, Field] = {}
    inherited_slots: set[str] = set()
    for base in cls.__mro__[-2:0:-1]:
        declared.update((f.name, f) for f in base.__dict__.get("__record_fields__", ()))
        inherited_slots.update(base.__dict__.get("__slots__", ()))
    for name, annotation in namespace.get("__annotations__", {}).items():
        if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = namespace.pop(name, MISSING)
        made = value if isinstance(value, Field) else Field(value, MISSING, True, True, False)
        if made.default.__class__ in (list, dict, set):
            raise ValueError(
                f"mutable default {made.default!r} for field {name}: use default_factory"
            )
        made.name, made.type = name, annotation
        declared[name] = made
    all_fields = tuple(declared.values())
    positional = [f for f in all_fields if not f.kw_only]
    for before, after in pairwise(positional):
        if _has_default(before) and not _has_default(after):
            raise TypeError(f"non-default argument {after.name!r} follows default argument")

    namespace["__slots__"] = tuple(f.name for f in all_fields if f.name not in inherited_slots)
    namespace.pop("__dict__", None)
    namespace.pop("__weakref__", None)
    namespace["__qualname__"] = cls.__qualname__
    namespace["__record_fields__"] = all_fields
    namespace.setdefault("__init__", _first_init)
    namespace.setdefault("__match_args__", tuple(f.name for f in positional))
    if repr:
        namespace["__record_shown__"] = tuple(f.name for f in all_fields if f.repr)
        namespace.setdefault("__repr__", _repr)
    if eq:
        namespace["__record_key__"] = _getter([f.name for f in all_fields if f.compare])
        namespace.setdefault("__eq__", _eq)
        # a class's own __hash__ stays; None beside its own __eq__ is Python's, not its own
        own_hash = namespace.get("__hash__", MISSING)
        if own_hash is MISSING or (own_hash is None and "__eq__" in cls.__dict__):
            namespace["__hash__"] = _hash if frozen else None
    made_class: type[_T] = type(cls.__name__, cls.__bases__, namespace)
    return made_class


def _has_default(declared: Field) -> bool:
    return declared.default is not MISSING or declared.default_factory is not MISSING


def _getter(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """A function giving an object's values of `names`, as a tuple (a static method: the
    class holds it)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        single = attrgetter(names[0])
        return staticmethod(lambda obj: (single(obj),))
    return staticmethod(lambda obj: ())


def _eq(self: object, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented  # type: ignore[no-any-return]
    key = self.__record_key__  # type: ignore[attr-defined]
    result: bool = key(self) == key(other)
    return result


def _hash(self: Any) -> int:
    return hash(self.__record_key__(self))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__record_shown__)
    return f"{self.__class__.__qualname__}({shown})"


def _first_init(self: Any, *args: Any, **kwargs: Any) -> None:
    """Every record's `__init__` until its first call, which compiles the real one."""
    for cls in self.__class__.__mro__:
        if cls.__dict__.get("__init__") is _first_init:
            break
    init = _compile_init(cls)
    cls.__init__ = init
    init(self, *args, **kwargs)


def _compile_init(cls: type) -> Callable[..., None]:
    """`cls`'s `__init__`: the code compiled for its shape, given its names and defaults."""
    declared = fields(cls)
    ordered = [f for f in declared if not f.kw_only] + [f for f in declared if f.kw_only]
    positional = sum(not f.kw_only for f in declared)
    made = tuple(f.default_factory is not MISSING for f in ordered)
    template = _TEMPLATES.get((positional, made))
    if template is None:
        template = _TEMPLATES[positional, made] = _template(positional, made)
    names = {f"_{i}": f.name for i, f in enumerate(ordered)}
    code = template.replace(
        co_names=tuple(names.get(name, name) for name in template.co_names),
        co_varnames=tuple(names.get(name, name) for name in template.co_varnames),
        co_qualname=f"{cls.__qualname__}.__init__",
    )
    scope = {"MISSING": MISSING}
    scope.update((f"_f{i}", f.default_factory) for i, f in enumerate(ordered) if made[i])
    defaults = {f.name: f.default if f.default_factory is MISSING else MISSING for f in ordered}
    init = FunctionType(
        code,
        scope,
        "__init__",
        tuple(defaults[f.name] for f in ordered[:positional] if _has_default(f)),
    )
    init.__kwdefaults__ = {
        f.name: defaults[f.name] for f in ordered[positional:] if _has_default(f)
    }
    return init


# (positional fields, which fields have a default_factory) -> the code of an __init__, its
# parameters and fields named _0, _1, ...: compiling is the slow part, and records share shapes
_TEMPLATES: dict[tuple[int, tuple[bool, ...]], CodeType] = {}


def _template(positional: int, made: tuple[bool, ...]) -> CodeType:
    params = ["self", *(f"_{i}" for i in range(positional))]
    if positional < len(made):
        params += ["*", *(f"_{i}" for i in range(positional, len(made)))]
    body = "".join(
        f"    self._{i} = _f{i}() if _{i} is MISSING else _{i}\n"
        if factory
        else f"    self._{i} = _{i}\n"
        for i, factory in enumerate(made)
    )
    scope: dict[str, Any] = {}
    exec(f"def __init__({', '.join(params)}):\n{body or '    pass'}\n", scope)
    code: CodeType = scope["__init__"].__code__
    return code
