"""verify's acceptance checks of the platform itself, one module each (the add-ons' own checks
are their contributions, AddonParts.checks); manifests/verify.py runs them in order."""
