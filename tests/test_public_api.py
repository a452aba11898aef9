"""The public API is pinned: a change to it is a deliberate change to these lists."""

import importlib
import pkgutil
import subprocess
import sys
import warnings

import pytest

import inferact_langgraph
import inferact_langgraph.cache
import inferact_langgraph.critics
import inferact_langgraph.errors

# What the README and docs/*.md import from the top level, plus the root error and the errors
# a caller catches around a guarded graph.
TOP_LEVEL = [
    "Critic",
    "CriticError",
    "CriticalSpec",
    "FeedbackMemory",
    "GuardOptions",
    "InferActCritic",
    "InferActError",
    "InferActMiddleware",
    "ResumeError",
    "Step",
    "Trajectory",
    "UnauthorizedCriticalCall",
    "UnsupportedGraphError",
    "Verdict",
    "allow_critical_calls",
    "critical",
    "make_critic",
    "with_inferact",
]

# The modules a user may import (the README and docs/ teach each one); every other module of the
# package is private (a leading underscore) and may change without notice.
PUBLIC_MODULES = [
    "cache",
    "calibration",
    "cli",
    "critics",
    "errors",
    "eval",
    "examples",
    "guard",
    "inbox",
    "labels",
    "prompts",
    "replay",
    "testing",
    "trajectory",
]

# The guard's modules the docs import by their short path, and where each lives.
GUARD_PATHS = {
    "memory": "memory",
    "middleware": "middleware",
    "records": "records",
    "resume": "resume",
    "review": "payloads",
    "scope": "requests",
}

# Extras the core never imports: the research harness needs them, a guarded agent does not.
HEAVY = ("sklearn", "numpy", "scipy", "matplotlib", "tqdm", "pandas")


def test_top_level_api_is_pinned_and_sorted():
    assert inferact_langgraph.__all__ == sorted(inferact_langgraph.__all__)
    assert inferact_langgraph.__all__ == TOP_LEVEL
    for name in TOP_LEVEL:
        assert getattr(inferact_langgraph, name) is not None


def test_the_public_modules_are_pinned():
    found = sorted(
        m.name for m in pkgutil.iter_modules(inferact_langgraph.__path__) if m.name[0] != "_"
    )
    assert found == PUBLIC_MODULES


def test_the_documented_guard_paths_name_the_guard_modules():
    for path, module in GUARD_PATHS.items():
        short = importlib.import_module(f"inferact_langgraph.{path}")
        assert short is importlib.import_module(f"inferact_langgraph.guard.{module}"), path
        assert getattr(inferact_langgraph, path) is short


def test_a_documented_guard_path_imports_in_a_fresh_interpreter():
    code = (
        "from inferact_langgraph.scope import TaskLocator\n"
        "from inferact_langgraph.resume import resume_review\n"
        "import inferact_langgraph.review as review\n"
        "print(TaskLocator.__module__, resume_review.__module__, review.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [
        "inferact_langgraph.guard.requests",
        "inferact_langgraph.guard.resume",
        "inferact_langgraph.guard.payloads",
    ]


@pytest.mark.parametrize("name", [m for m in PUBLIC_MODULES if m != "guard"] + list(GUARD_PATHS))
def test_a_public_module_declares_its_public_names(name):
    module = importlib.import_module(f"inferact_langgraph.{name}")
    names = module.__all__
    assert names, name
    assert len(set(names)) == len(names), name
    for public in names:
        assert not public.startswith("_"), public
        assert getattr(module, public, None) is not None, f"{name}.{public}"


def test_the_rest_lives_in_its_module():
    assert {
        "InferActCritic",
        "LogprobCritic",
        "MultiStepCritic",
        "SelfConsistencyCritic",
        "StandardEvalCritic",
        "make_critic",
    } <= set(inferact_langgraph.critics.__all__)
    assert {"CachedCritic", "InMemoryVerdictCache", "VerdictCache"} <= set(
        inferact_langgraph.cache.__all__
    )
    root = inferact_langgraph.InferActError
    for name in ("CriticModelError", "CriticParseError", "CriticTimeoutError", "DatasetError"):
        assert issubclass(getattr(inferact_langgraph.errors, name), root)
    # The top-level names are the modules' own objects, not copies.
    assert inferact_langgraph.InferActCritic is inferact_langgraph.critics.InferActCritic


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("StandardEvalCritic", inferact_langgraph.critics),
        ("CachedCritic", inferact_langgraph.cache),
        ("CriticParseError", inferact_langgraph.errors),
    ],
)
def test_a_name_0_1_exported_still_resolves_with_a_deprecation_warning(name, module):
    with pytest.warns(DeprecationWarning, match=f"import {name} from {module.__name__}"):
        value = getattr(inferact_langgraph, name)
    assert value is getattr(module, name)
    assert name not in inferact_langgraph.__all__


def test_an_unknown_name_is_an_attribute_error():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation warning for a name that never existed
        with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
            _ = inferact_langgraph.NoSuchThing


def _import_with_heavy_extras_blocked(module: str) -> subprocess.CompletedProcess[str]:
    # A None entry in sys.modules makes any import of that package fail, as if not installed.
    code = (
        "import sys\n"
        f"for name in {HEAVY!r}:\n"
        "    sys.modules[name] = None\n"
        f"import {module}\n"
        f"loaded = [n for n in {HEAVY!r} if sys.modules.get(n) is not None]\n"
        "assert not loaded, loaded\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "module",
    [
        "inferact_langgraph",
        "inferact_langgraph.examples",  # the demo's environments (the base install's quickstart)
        "inferact_langgraph._demo",
        "inferact_langgraph.cli",
    ],
)
def test_the_core_imports_without_the_eval_extra(module):
    result = _import_with_heavy_extras_blocked(module)
    assert result.returncode == 0, result.stderr


def test_the_research_harness_without_the_eval_extra_says_which_extra_it_needs():
    result = _import_with_heavy_extras_blocked("inferact_langgraph.eval.trials")
    assert result.returncode != 0
    assert "pip install 'inferact-langgraph[eval]'" in result.stderr, result.stderr
