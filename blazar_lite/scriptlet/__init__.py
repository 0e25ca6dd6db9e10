"""The instance placement scriptlet (Starlark): compiling, checking and calling it."""
