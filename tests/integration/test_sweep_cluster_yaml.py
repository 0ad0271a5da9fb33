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


def _onprem():
    with open(os.path.join(ROOT, "cluster.onprem.yaml")) as f:
        return yaml.safe_load(f)


def test_onprem_yaml_validates_as_ray_prepares_it():
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = prepare_config(_onprem())  # the local provider fills in its one node type
    validate_config(config)
    assert config["provider"]["type"] == "local"
    assert config["provider"]["head_ip"] == "127.0.0.1"
    node = config["available_node_types"]["local.cluster.node"]
    assert node["min_workers"] == node["max_workers"] == len(config["provider"]["worker_ips"])


def test_onprem_start_commands_are_safe_on_a_shared_machine():
    config = _onprem()
    head = " ".join(config["head_start_ray_commands"])
    worker = " ".join(config["worker_start_ray_commands"])
    for cmd in (head, worker):
        assert "ray stop" not in cmd  # it would kill every Ray on the machine
        assert "RAY_AUTH_MODE=token" in cmd
        assert "--node-ip-address=" in cmd
    # the local provider needs autoscaler v1 (set after the launcher's own export)
    assert "RAY_enable_autoscaler_v2=0" in head
    # each node its own temp dir, never Ray's shared default
    head_tmp = head.split("--temp-dir=")[1].split()[0]
    worker_tmp = worker.split("--temp-dir=")[1].split()[0]
    assert head_tmp != worker_tmp and not head_tmp.startswith("/tmp/ray")
    assert "~/.ray/auth_token" in config["file_mounts"]
