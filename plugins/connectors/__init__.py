"""Hosted connectors of the Context Engine: GitHub, Jira and Slack (providers of kind ``connector``)."""
