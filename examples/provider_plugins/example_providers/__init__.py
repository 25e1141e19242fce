"""One provider of each kind, small enough to read in one sitting; each passes its contract suite in
``gateway/contracts`` (``tests/examples/test_provider_plugins.py``)."""
