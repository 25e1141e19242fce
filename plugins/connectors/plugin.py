"""Entry point of the hosted connectors: ``github``, ``jira`` and ``slack``, providers of kind ``connector``."""

from __future__ import annotations

from gateway.api import CONNECTOR, ProviderRegistrar, hookimpl
from gateway_plugins.connectors.github import GitHubConfig, github_connector_factory
from gateway_plugins.connectors.jira import JiraConfig, jira_connector_factory
from gateway_plugins.connectors.slack import SlackConfig, slack_connector_factory


@hookimpl
def gateway_register_providers(register: ProviderRegistrar) -> None:
    register(
        CONNECTOR,
        "github",
        github_connector_factory,
        config_model=GitHubConfig,
        description="A GitHub repository's issues and pull requests with comments and changed files (REST 2022-11-28).",
    )
    register(
        CONNECTOR,
        "jira",
        jira_connector_factory,
        config_model=JiraConfig,
        description="Jira Cloud issues found by JQL, with comments (REST v3, enhanced search).",
    )
    register(
        CONNECTOR,
        "slack",
        slack_connector_factory,
        config_model=SlackConfig,
        description="Slack channel history with threads (Web API conversations.*).",
    )
