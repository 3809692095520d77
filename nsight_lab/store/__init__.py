"""The run store: sessions and runs in SQLite, its schema, and the background writer."""
