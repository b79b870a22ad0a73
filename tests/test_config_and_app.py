"""Configuration precedence, and the workbench skeleton under Streamlit's AppTest."""


from forest import load_settings


def test_precedence_defaults_toml_environment_overrides(tmp_path):
    toml = tmp_path / "forest.toml"
    toml.write_text('[forest]\nchunk_size = 500\ntop_k = 4\nmerge_threshold = 0.4\n', encoding="utf-8")
    env = {"FOREST_CONFIG": str(toml), "FOREST_TOP_K": "6", "CHROMA_HOST": "chroma.local", "CHROMA_PORT": "9000"}
    settings = load_settings({"merge_threshold": 0.1}, environ=env)
    assert settings.chunk_size == 500               # from forest.toml
    assert settings.top_k == 6                      # environment beats the file
    assert settings.merge_threshold == 0.1          # explicit override beats both
    assert (settings.chroma_host, settings.chroma_port) == ("chroma.local", 9000)
    assert settings.drill_threshold == 0.3          # default
    shown = load_settings(environ={"ANTHROPIC_API_KEY": "secret"}).describe()
    assert shown["anthropic_api_key"] == "set" and "secret" not in str(shown)


def test_unknown_toml_settings_are_reported(tmp_path):
    import pytest

    from forest import ConfigError

    toml = tmp_path / "forest.toml"
    toml.write_text("chunk_sise = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown settings"):
        load_settings(environ={"FOREST_CONFIG": str(toml)})
