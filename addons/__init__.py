"""The platform's add-ons, one package each: `addons/<key>/__init__.py` holds what the profile
validator reads (settings, pin, minimums, namespace; binding-free) and `addons/<key>/install.py`
installs it. `addons/catalog.py` lists them in install order; everything else is derived."""
