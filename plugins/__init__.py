"""Built-in plugins, installed under the import name ``gateway_plugins``."""
