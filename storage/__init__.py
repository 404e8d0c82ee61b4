"""SQLModel tables, the async engine and sessions, migrations, and shared query helpers."""
