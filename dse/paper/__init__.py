"""The paper side by side: its reported numbers against the tool's, with intervals."""
