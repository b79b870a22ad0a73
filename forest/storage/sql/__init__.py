"""The databases: the Database interface, SQLite and PostgreSQL, their migrations, the local PostgreSQL."""
