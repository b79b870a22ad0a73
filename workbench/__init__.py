"""The workbench's pages and what they share, run by app.py's st.navigation (never on their own)."""
