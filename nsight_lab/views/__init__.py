"""A profile in the notebook: the inline widget, its live driver, the fallback."""
