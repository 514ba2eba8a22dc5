"""cuvil_aot's version, written here and in pyproject.toml's [project] table."""

__version__ = "0.1.0"
