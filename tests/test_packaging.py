"""A real, non-editable install: the wheel built from this checkout, installed into a fresh venv,
runs the `forest` command end to end without the source tree on the path."""
import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

from conftest import ROOT, topic_text


def test_the_wheel_carries_every_package_and_runs_forest(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                    "-w", str(wheels), str(ROOT)], check=True, timeout=300, cwd=tmp_path)
    [wheel] = wheels.glob("memory_forest-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    packages = {str(p.parent.relative_to(ROOT)) for p in ROOT.glob("forest/**/__init__.py")} | {"ingest"}
    assert {f"{package}/__init__.py" for package in packages} <= set(names)
    assert {"forest/research/memory.py", "forest/personal/service.py"} <= set(names)

    # nothing of this checkout on the path: PYTHONPATH would make pip and Python see the source tree
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "FOREST_DATA_DIR": str(tmp_path / "store"),
           "HF_HUB_OFFLINE": "1"}
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--quiet", str(wheel)], check=True, timeout=300,
                   env=env, cwd=tmp_path)
    # the dependencies come from this test's environment (no download); the engine only from the wheel
    site = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                          check=True, capture_output=True, text=True, env=env).stdout.strip()
    dependencies = [p for p in sys.path if p.endswith("site-packages")]
    Path(site, "test-dependencies.pth").write_text("\n".join(dependencies) + "\n")
    where = subprocess.run([str(python), "-c", "import forest, forest.research, forest.personal; print(forest.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert where.stdout.startswith(site)
    forest = env_dir / "bin" / "forest"
    assert "ingest" in subprocess.run([str(forest), "--help"], check=True, capture_output=True, text=True,
                                      env=env, cwd=tmp_path).stdout
    document = tmp_path / "notes.md"
    document.write_text("# Notes\n\n## Volcanoes\n\n" + topic_text("volcanoes"), encoding="utf-8")
    made = subprocess.run([str(forest), "ingest", str(document), "--model-id", "m", "--json"], check=True,
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert json.loads(made.stdout)[0]["status"] == "ready"
