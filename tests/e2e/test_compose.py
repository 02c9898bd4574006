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
    postgres = compose["services"]["postgres"]
    assert postgres["healthcheck"]["test"]
    assert "pgdata" in compose["volumes"]


def test_readme_names_the_compose_database_url() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "postgresql://planledger:planledger@127.0.0.1:5433/planledger" in readme
