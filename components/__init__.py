"""Reusable constructs, each taking `(scope, id_, *, props)` with a small typed props object.

Named `components` because a package named `constructs` would shadow the library cdktf imports.
"""
