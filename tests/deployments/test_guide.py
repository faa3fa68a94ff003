"""The deployments guide (`deployments/README.md`) lists exactly the deployments `prefect deploy --all` creates
from `deployments/prefect.yaml`, by the names Prefect gives them (`<flow name>/<deployment name>`)."""

from __future__ import annotations

import importlib
import re

import yaml

from tests.conftest import REPO_ROOT

GUIDE = REPO_ROOT / "deployments" / "README.md"
PREFECT_YAML = REPO_ROOT / "deployments" / "prefect.yaml"


def deployed_names() -> list[str]:
    """`flow name/deployment name` of each deployment in prefect.yaml, the flow's name read from its object."""
    names = []
    for deployment in yaml.safe_load(PREFECT_YAML.read_text(encoding="utf-8"))["deployments"]:
        path, _, attribute = deployment["entrypoint"].partition(":")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        names.append(f"{getattr(module, attribute).name}/{deployment['name']}")
    return names


def listed_names() -> list[str]:
    """The first column of the guide's first table."""
    table = GUIDE.read_text(encoding="utf-8").split("| deployment | what it is |", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", table, re.M)


def test_the_guide_lists_every_deployment_of_prefect_yaml_once() -> None:
    assert listed_names() == deployed_names()
    assert len(deployed_names()) == 7
    assert "creates all seven" in GUIDE.read_text(encoding="utf-8")
