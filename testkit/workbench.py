"""The workbench under Streamlit's AppTest, opened and steered as a person does."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]


def open_app() -> AppTest:
    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()


def button(app: AppTest, label: str):
    return next(b for b in app.button if b.label == label)


def use_model_id(app: AppTest, model_id: str) -> AppTest:
    """Pick `model_id` in the sidebar, or name it as a new one as a person does."""
    from workbench.shared import NEW_MODEL_ID

    pick = app.sidebar.selectbox(key="model_id_pick")
    if model_id in pick.options:
        return pick.set_value(model_id).run()
    pick.set_value(NEW_MODEL_ID).run()
    app.sidebar.text_input(key="new_model_id_name").set_value(model_id)
    return button(app, "Create").click().run()
