"""docker-compose.yml is valid against the Compose specification (no Docker engine here)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[2]
# A copy of the compose-spec JSON schema the team keeps in shared/schemas/.
SCHEMA = Path(__file__).resolve().parents[1] / "data" / "compose-spec.json"


def test_compose_file_is_valid() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator(schema).validate(compose)  # the schema declares draft-07
    postgres, server = compose["services"]["postgres"], compose["services"]["server"]
    assert postgres["healthcheck"]["test"] and server["healthcheck"]["test"]
    for service in (postgres, server):  # failures while starting up do not count
        assert service["healthcheck"]["start_period"]
    assert {"pgdata", "planledger-home"} <= set(compose["volumes"])
    url = server["environment"]["PLANLEDGER_DATABASE_URL"]
    assert url == "postgresql://planledger:planledger@postgres:5432/planledger"
    assert server["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert server["ports"] == ["127.0.0.1:8765:8765"]  # published on loopback only


def test_dockerfile_serves_the_ledger() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["planledger", "serve", "--host", "0.0.0.0", "--port", "8765"]' in dockerfile
    assert "HEALTHCHECK" in dockerfile and "USER planledger" in dockerfile
    for package in ("domain", "projections", "planledger"):
        assert f"COPY {package} ./{package}" in dockerfile


def test_the_mit_license_pyproject_declares_is_there() -> None:
    assert 'license = "MIT"' in (ROOT / "pyproject.toml").read_text()
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("MIT License")
    assert "Copyright (c) the plan ledger authors" in license_text


def test_readme_names_the_compose_database_url() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "postgresql://planledger:planledger@127.0.0.1:5433/planledger" in readme
