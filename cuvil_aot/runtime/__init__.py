"""Python-side helpers of the native runtime (``cuvil_aot._runtime``)."""
