"""Search, lowest common ancestors, and the ANSWER/EXPLORE agent."""
