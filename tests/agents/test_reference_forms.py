"""Reference forms are one registry (`agent_eval.agents.references.REFERENCE_FORMS`): `--help` lists it, and
`resolve_agent` sends a reference to the adapter of its form, so an adapter with a form of its own is its
module plus one `ReferenceForm` line."""

from __future__ import annotations

import importlib

import pytest

from agent_eval.agents import AdkApiAgent, HttpAgent, ReplayAgent, references, resolve, resolve_agent
from agent_eval.agents.callable import CallableAgent
from agent_eval.agents.references import AGENT_REFERENCE_FORMS, REFERENCE_FORMS, ReferenceForm
from agent_eval.cli.parser import build_parser


def echo_adapter(reference: str) -> CallableAgent:
    """A made-up adapter for the `echo+` form: answers with the text after the prefix."""
    text = reference.removeprefix("echo+")
    return CallableAgent(lambda message: f"{text}: {message}", reference=reference, fingerprint="echo")


def test_help_lists_every_form_once_in_registry_order(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "2000")  # no wrapping: argparse breaks lines at hyphens
    lines = AGENT_REFERENCE_FORMS.splitlines()
    assert [line.split()[0] for line in lines] == [form.syntax for form in REFERENCE_FORMS]
    assert lines[0] == (
        "adk-api+http://HOST:PORT/APP    app APP of an ADK api_server (`adk api_server`; adk-api+https:// too)"
    )
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    run_help = " ".join(capsys.readouterr().out.split())
    assert all(" ".join(line.split()) in run_help for line in lines)


def test_every_resolver_names_a_function_that_exists() -> None:
    for form in REFERENCE_FORMS:
        if form.resolver is not None:
            module, _, function = form.resolver.partition(":")
            assert callable(getattr(importlib.import_module(module), function)), form.resolver


@pytest.mark.parametrize(
    ("reference", "kind"),
    [
        ("replay", ReplayAgent),
        ("http://127.0.0.1:9/agent", HttpAgent),
        ("adk-api+http://127.0.0.1:9/home", AdkApiAgent),
        ("tests.agents.test_reference_forms:echo_adapter", CallableAgent),
    ],
)
def test_a_reference_goes_to_the_adapter_of_its_form(reference: str, kind: type) -> None:
    assert isinstance(resolve_agent(reference), kind)


def test_a_replay_prefixed_module_is_user_code_not_the_replay_form() -> None:
    agent = resolve_agent("tests.agents.test_reference_forms:echo_adapter")
    assert agent.reference == "tests.agents.test_reference_forms:echo_adapter"
    assert not ReferenceForm("replay", "m", exact="replay").selects("replay_agents.py:x")


def test_one_registry_line_adds_a_form(monkeypatch: pytest.MonkeyPatch) -> None:
    line = ReferenceForm("echo+TEXT", "answers TEXT: message", prefixes=("echo+",), resolver=f"{__name__}:echo_adapter")
    monkeypatch.setattr(references, "REFERENCE_FORMS", (*REFERENCE_FORMS, line))
    monkeypatch.setattr(resolve, "REFERENCE_FORMS", references.REFERENCE_FORMS)

    agent = resolve_agent("echo+hello")

    assert isinstance(agent, CallableAgent) and agent.reference == "echo+hello"
