"""The workbench's pages, run by app.py's st.navigation (never on their own)."""
import streamlit as st
from streamlit.runtime.pages_manager import PagesManager


def through_app() -> None:
    """Run this script run through app.py. Streamlit reads a folder named pages/ beside the entry
    script as a legacy multipage app, and until a script of the process calls st.navigation it runs
    a script run through that legacy discovery: a deep link such as /tree, opened after a restart,
    ran pages/tree.py alone, without app.py's shell (titles, icons, wide layout, endpoint status),
    under a sidebar listing every file. app.py and every page call this first: such a run switches
    the legacy discovery off for the process and starts again through app.py, on the same URL."""
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
