"""Memory Forest workbench (Streamlit). Pages arrive with the workbench issue; this page already
shows the forests in the default store, through the same engine the CLI uses."""
import streamlit as st

from forest import MemoryForest


@st.cache_resource
def get_forest() -> MemoryForest:
    return MemoryForest()


st.set_page_config(page_title="Memory Forest", layout="wide")
st.title("Memory Forest")
forest = get_forest()
model_ids = forest.model_ids()
if not model_ids:
    st.info("No archives yet. Ingest a document with `forest ingest PATH --model-id M`.")
else:
    model_id = st.selectbox("model_id", model_ids)
    st.dataframe([a.to_dict() for a in forest.archives(model_id)], hide_index=True)
