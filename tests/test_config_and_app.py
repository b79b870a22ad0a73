"""Configuration precedence, and the workbench skeleton under Streamlit's AppTest."""

import httpx
from streamlit.testing.v1 import AppTest

from conftest import ROOT, free_port, topic_text
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


def test_workbench_lists_the_archives_of_the_default_store(make_forest, tmp_path, monkeypatch):
    forest = make_forest(chunk_size=300)
    forest.ingest_text("reader", "jazz history", topic_text("jazz"))
    monkeypatch.setenv("FOREST_DATA_DIR", str(forest.settings.data_dir))
    port = free_port()
    monkeypatch.setenv("FOREST_SERVER_PORT", str(port))
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not app.exception
    assert app.title[0].value == "Memory Forest"
    assert app.selectbox[0].value == "reader"
    assert "jazz history" in app.dataframe[0].value["name"].tolist()
    # The embedded MCP/REST endpoint serves the same store, and its URL is on the page.
    assert f"http://127.0.0.1:{port}/mcp" in app.sidebar.code[0].value
    listed = httpx.get(f"http://127.0.0.1:{port}/tools/list_archives", params={"model_id": "reader"}).json()
    assert [a["name"] for a in listed["archives"]] == ["jazz history"]
