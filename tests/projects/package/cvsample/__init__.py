"""A sample project with marked modules, built by every supported inner backend."""
