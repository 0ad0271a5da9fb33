"""cluster.yaml passes Ray's own cluster-launcher validation (the JSON schema Ray ships)."""

from __future__ import annotations

import os

import pytest
import yaml

pytest.importorskip("ray")
pytest.importorskip("jsonschema")

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_cluster_yaml_validates():
    from ray.autoscaler._private.util import prepare_config, validate_config

    with open(os.path.join(ROOT, "cluster.yaml")) as f:
        config = yaml.safe_load(f)
    validate_config(prepare_config(config))  # raises on an invalid config
    assert config["provider"]["type"] == "aws"
    assert any("grokray" in c for c in config["setup_commands"])
    gpu = config["available_node_types"]["gpu_worker"]["resources"]
    assert gpu["GPU"] >= 1


def test_cluster_yaml_rejects_a_broken_copy():
    from ray.autoscaler._private.util import prepare_config, validate_config

    with open(os.path.join(ROOT, "cluster.yaml")) as f:
        config = yaml.safe_load(f)
    config["provider"]["no_such_field"] = 1
    config["head_node_type"] = "missing"
    with pytest.raises(Exception):  # noqa: B017 - jsonschema or ValueError, both mean "invalid"
        validate_config(prepare_config(config))
